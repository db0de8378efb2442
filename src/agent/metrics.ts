// The agent's Prometheus metrics: one registry, every gauge and counter its duties update. Label
// sets are bounded (per pod only for SMC-R pods of this node; reasons from a fixed table).
import { Counter, Gauge, Registry, collectDaemonDefaultMetrics } from '../util/prom.js';

export class AgentMetrics {
  readonly registry = new Registry();
  readonly capable = new Gauge({
    name: 'erdma_smcr_agent_node_capable',
    help: '1 when this node can run SMC-R pods.',
    registers: [this.registry],
  });
  readonly devices = new Gauge({
    name: 'erdma_smcr_agent_devices',
    help: 'eRDMA devices found, by health.',
    labelNames: ['healthy'] as const,
    registers: [this.registry],
  });
  readonly cniChained = new Gauge({
    name: 'erdma_smcr_agent_cni_chained',
    help: '1 when our plugin is in the active CNI configuration.',
    registers: [this.registry],
  });
  readonly pnetErrors = new Gauge({
    name: 'erdma_smcr_agent_host_pnet_errors',
    help: 'eRDMA devices whose host pnet entry could not be added.',
    registers: [this.registry],
  });
  readonly pods = new Gauge({
    name: 'erdma_smcr_agent_pods',
    help: 'SMC-R pods on this node by outcome: applied, partial, tcp (kernel without SMC-R), missed (plugin did not run), late (applied after start).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly events = new Counter({
    name: 'erdma_smcr_agent_events_total',
    help: 'Events posted on pods, by reason.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly driverActions = new Counter({
    name: 'erdma_smcr_agent_driver_actions_total',
    help: 'modprobe runs of agent.manageDriver, by module arguments and result (ok, failed).',
    labelNames: ['modprobe', 'result'] as const,
    registers: [this.registry],
  });
  readonly podConnections = new Gauge({
    name: 'erdma_smcr_pod_connections',
    help: "Established SMC connections of each SMC-R pod on this node by mode (SMCR, SMCD, TCP: fell back; KEPT: kept on TCP by the pod's SMC selection), from smc_diag at the last sample.",
    labelNames: ['namespace', 'pod', 'mode'] as const,
    registers: [this.registry],
  });
  readonly podFallbacks = new Gauge({
    name: 'erdma_smcr_pod_fallback_connections',
    help: 'Connections of each SMC-R pod that fell back to TCP, by decoded reason (SMC_CLC_DECL_ name), at the last sample.',
    labelNames: ['namespace', 'pod', 'reason'] as const,
    registers: [this.registry],
  });
  readonly podLoopbackFallbacks = new Gauge({
    name: 'erdma_smcr_pod_loopback_fallback_connections',
    help: 'Connections of each SMC-R pod to or from a loopback address that fell back to TCP, at the last sample: expected (no RDMA device serves lo), so not in erdma_smcr_pod_fallback_connections.',
    labelNames: ['namespace', 'pod'] as const,
    registers: [this.registry],
  });
  readonly podBytes = new Gauge({
    name: 'erdma_smcr_pod_smcr_bytes',
    help: "Bytes moved by each SMC-R pod's open SMC-R connections (send/receive buffer cursors), at the last sample.",
    labelNames: ['namespace', 'pod', 'direction'] as const,
    registers: [this.registry],
  });
  readonly samplePods = new Gauge({
    name: 'erdma_smcr_agent_smc_sample_pods',
    help: 'SMC-R pods read at the last sample, by result (ok, error).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly enis = new Gauge({
    name: 'erdma_smcr_agent_enis',
    help: "eRDMA ENIs by the last pass of agent.manageEni: primary, configured, already-configured, foreign (up with an address that is not the metadata's), failed.",
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics !== false) collectDaemonDefaultMetrics(this.registry);
  }
}

/** One RDMA device port's traffic counters, as observe/counters.ts reads them from sysfs. */
export interface PortCounters {
  readonly device: string;
  readonly port: number;
  /** Which scheme the names followed. */
  readonly scheme: 'erdma' | 'erdma-out-of-tree' | 'rxe' | 'unknown';
  readonly txBytes?: number;
  readonly rxBytes?: number;
  readonly txPackets?: number;
  readonly rxPackets?: number;
  readonly txDrops?: number;
  readonly rxDrops?: number;
}

/**
 * Device traffic as Prometheus counters, read from sysfs at each scrape (`read` gives every port
 * of every device): bytes, packets and drops, by device, port and direction.
 */
export function mirrorDeviceCounters(registry: Registry, read: () => PortCounters[]): void {
  const labelNames = ['device', 'port', 'direction'] as const;
  const mirror = (
    name: string,
    help: string,
    pick: (c: PortCounters, dir: 'tx' | 'rx') => number | undefined,
  ): void => {
    if (registry.getSingleMetric(name)) return;
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const c of read()) {
          for (const dir of ['tx', 'rx'] as const) {
            const v = pick(c, dir);
            if (v !== undefined)
              this.inc({ device: c.device, port: String(c.port), direction: dir }, v);
          }
        }
      },
    });
  };
  mirror(
    'erdma_smcr_device_bytes_total',
    'Bytes through each RDMA device port (driver hw_counters: erdma tx/rx_bytes_cnt, hw_ prefixed out of tree).',
    (c, d) => (d === 'tx' ? c.txBytes : c.rxBytes),
  );
  mirror(
    'erdma_smcr_device_packets_total',
    'Packets through each RDMA device port (erdma tx/rx_packets_cnt; rxe sent/rcvd_pkts).',
    (c, d) => (d === 'tx' ? c.txPackets : c.rxPackets),
  );
  mirror(
    'erdma_smcr_device_drops_total',
    'Packets each RDMA device port dropped (the sum of its *drop_cnt counters).',
    (c, d) => (d === 'tx' ? c.txDrops : c.rxDrops),
  );
}
