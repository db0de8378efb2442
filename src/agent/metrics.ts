// The agent's Prometheus metrics: one registry, every gauge and counter its duties update. Label
// sets are bounded (per pod only for SMC-R pods of this node; reasons from a fixed table).
import { Counter, Gauge, Registry, collectDaemonDefaultMetrics } from '../util/prom.js';
import type { AgentConfig } from '../config/schema.js';
import { listenFailure, startProbeServer, type ProbeServer, type Probes } from '../util/probes.js';

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

/**
 * The device plugin process's metrics (`erdma-smcr device-plugin`): its own, never the agent's,
 * whose gauges would read 0 there (node not capable, CNI not chained) and fire the agent's alerts
 * on every node.
 */
export class DevicePluginMetrics {
  readonly registry = new Registry();

  constructor(plugins: () => readonly { resourceName: string; isRegistered: boolean }[]) {
    collectDaemonDefaultMetrics(this.registry);
    new Gauge({
      name: 'erdma_smcr_device_plugin_registered',
      help: '1 when the device plugin for each resource is registered with the kubelet.',
      labelNames: ['resource'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const p of plugins()) this.set({ resource: p.resourceName }, p.isRegistered ? 1 : 0);
      },
    });
  }
}

/** The DRA driver's /metrics: registration, prepared claims, slice writes. */
export class DraPluginMetrics {
  readonly registry = new Registry();

  constructor(
    state: () => {
      registered: boolean;
      prepared: number;
      sliceWrites: number;
      sliceProblem: boolean;
    },
  ) {
    collectDaemonDefaultMetrics(this.registry);
    const gauge = (name: string, help: string, value: () => number): void => {
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(value());
        },
      });
    };
    gauge(
      'erdma_smcr_dra_registered',
      '1 when the DRA driver is registered with the kubelet.',
      () => (state().registered ? 1 : 0),
    );
    gauge(
      'erdma_smcr_dra_prepared_claims',
      'ResourceClaims prepared on this node (its checkpoint).',
      () => state().prepared,
    );
    gauge(
      'erdma_smcr_dra_slice_writes',
      'ResourceSlice creates and updates by this process (it writes only when something changed).',
      () => state().sliceWrites,
    );
    gauge(
      'erdma_smcr_dra_slice_failing',
      '1 while the last attempt to publish the ResourceSlice failed.',
      () => (state().sliceProblem ? 1 : 0),
    );
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

/**
 * A node daemon's probes and /metrics on agent.metricsHost:metricsPort, or none when metrics are
 * off. A port it cannot listen on is one line naming the setting (the agent's and the device
 * plugin's share it).
 */
export async function startDaemonProbes(
  a: AgentConfig,
  probes: Probes,
): Promise<ProbeServer | undefined> {
  if (!a.metricsEnabled) return undefined;
  return startProbeServer(a.metricsHost, a.metricsPort, probes).catch((err: unknown) => {
    throw listenFailure(
      err,
      `${a.metricsHost}:${a.metricsPort}`,
      'agent.metricsPort (ERDMA_SMCR_AGENT_METRICS_PORT)',
    );
  });
}
