// The node room's duties (src/agent/duty.ts for their shape): the devices found, what the node
// can do, the labels that say it, and the eRDMA driver mode (agent.manageDriver). The logic each
// wraps is in its own module beside this one.
import type { Logger } from 'pino';
import { apiReason } from '../../cluster/client.js';
import type { Clock, Duty, Problem } from '../duty.js';
import { Told, type EventSink } from '../events.js';
import type { AgentMetrics } from '../metrics.js';
import { capability, capabilityLabels, hostFacts, type Capability } from './capability.js';
import type { RdmaDevice } from '../../devices/discovery.js';
import { reconcileDriver, type DriverPassOptions } from './driver.js';
import type { NodeLabeler } from './labels.js';
import type { Mechanisms } from './mechanisms.js';
import { NODE_LABELS } from '../../constants.js';
import type { HeldBack } from '../../kubelet/held-back.js';

/** The devices duty: reads the node's devices once per refresh, for the duties after it. */
export class DevicesDuty implements Duty {
  readonly name = 'devices';
  current: RdmaDevice[] = [];

  constructor(private readonly find: () => RdmaDevice[]) {}

  problem(): undefined {
    return undefined;
  }

  async pass(): Promise<void> {
    this.current = this.find();
  }
}

/**
 * The capability duty: what the node can do now, from the host's facts, the devices found in this
 * refresh and the ENI duty's problem; the labels and host pnet duties read it after. Not being
 * capable is no readiness problem: the labels say it, and the webhook reads them.
 */
export class CapabilityDuty implements Duty {
  readonly name = 'capability';
  current: Capability | undefined;

  constructor(
    private readonly o: {
      readonly procRoot: string;
      readonly hostRoot: string;
      readonly devices: () => readonly RdmaDevice[];
      readonly eniProblem: () => string | undefined;
      /** agent.tcp2smcNodes (capability()). */
      readonly tcp2smcNodes?: 'preload' | 'tcp2smc';
      /** The mechanism probe (absent: only the tcp2smc knob is considered). */
      readonly mechanisms?: Mechanisms;
      readonly metrics: AgentMetrics;
      readonly logger: Logger;
    },
  ) {}

  problem(): undefined {
    return undefined;
  }

  async pass(): Promise<void> {
    const devices = this.o.devices();
    const mechanisms = await this.o.mechanisms?.find();
    const cap = capability(
      { ...hostFacts(this.o.procRoot, this.o.hostRoot), ...(mechanisms ? { mechanisms } : {}) },
      devices,
      this.o.eniProblem(),
      this.o.tcp2smcNodes,
    );
    if (
      this.current?.capable !== cap.capable ||
      this.current?.reason !== cap.reason ||
      this.current?.mechanism !== cap.mechanism
    ) {
      this.o.logger.info(
        {
          capable: cap.capable,
          mechanism: cap.mechanism,
          driverMode: cap.driverMode,
          reason: cap.detail,
        },
        'node SMC-R capability',
      );
    }
    this.current = cap;
    const m = this.o.metrics;
    m.capable.set(cap.capable ? 1 : 0);
    m.devices.set({ healthy: 'true' }, devices.filter((d) => d.healthy).length);
    m.devices.set({ healthy: 'false' }, devices.filter((d) => !d.healthy).length);
  }
}

/** The labels duty: this node's smcr.erdma.io/* labels say what the capability duty found. */
export class LabelsDuty implements Duty {
  readonly name = 'labels';
  private why: Problem;

  /**
   * `labeler` undefined: no API server or no node name (`missing` says which). `heldBack`: what
   * the device plugin holds back for another registrant (../kubelet/held-back.ts), said with
   * the smcr.erdma.io/device-plugin-reason label and a Node Event each time that label changes.
   */
  constructor(
    private readonly labeler: NodeLabeler | undefined,
    private readonly capability: () => Capability | undefined,
    private readonly logger: Logger,
    missing?: string,
    private readonly heldBack: () => HeldBack = () => ({}),
    private readonly events?: EventSink,
  ) {
    this.why = labeler ? 'not labelled yet' : missing;
  }

  problem(): Problem {
    return this.why;
  }

  async pass(): Promise<void> {
    const cap = this.capability();
    if (!this.labeler || !cap) return;
    const held = this.heldBack();
    const resources = Object.keys(held).sort();
    let changed: string[] = [];
    try {
      changed = await this.labeler.apply({
        ...capabilityLabels(cap),
        [NODE_LABELS.devicePluginReason]: resources.length > 0 ? 'other-registrant' : null,
      });
      this.why = undefined;
    } catch (err) {
      this.why = `cannot label node ${this.labeler.nodeName}: ${apiReason(err)}`;
      this.logger.warn({ reason: apiReason(err) }, 'node labels not updated; will retry');
    }
    // Said when the label changes: once per hold, and once when ours serves again.
    if (this.events && changed.includes(NODE_LABELS.devicePluginReason))
      await this.events.node(
        resources.length === 0
          ? {
              type: 'Normal',
              reason: 'DevicePluginServing',
              message:
                "erdma-smcr's device plugin serves its resources: no other device plugin holds them now",
            }
          : {
              type: 'Warning',
              reason: 'DevicePluginHeldBack',
              message:
                `${resources.join(', ')} ${resources.length > 1 ? 'are' : 'is'} registered with the kubelet by another device plugin ` +
                `(its device IDs: ${resources.map((r) => held[r]!.others.slice(0, 3).join(', ')).join('; ')}): erdma-smcr's device plugin does not take ` +
                'it over. To serve it with ours, remove the other one or set agent.takeOverResources (chart: devices.takeOver=true); docs/install.md "Next to ACK\'s eRDMA controller"',
            },
      );
  }
}

/**
 * The driver duty (agent.manageDriver): the driver mode asked for and the modules it needs. Every
 * modprobe becomes a Node Event; a mode it cannot reach is told once and is a readiness problem.
 */
export class DriverDuty implements Duty {
  readonly name = 'driver';
  private why: Problem;
  private readonly mismatch: Told;

  constructor(
    private readonly o: DriverPassOptions & {
      readonly events: EventSink;
      readonly metrics: AgentMetrics;
      readonly clock: Clock;
    },
  ) {
    this.mismatch = new Told(o.clock);
  }

  problem(): Problem {
    return this.why;
  }

  async pass(): Promise<void> {
    const r = await reconcileDriver(this.o);
    for (const { action, error } of r.done) {
      const args = action.args.join(' ');
      this.o.metrics.driverActions.inc({ modprobe: args, result: error ? 'failed' : 'ok' });
      await this.o.events.node(
        error
          ? {
              reason: 'ERDMADriverActionFailed',
              message: `modprobe ${args} (${action.why}) failed: ${error.slice(0, 300)}`,
              type: 'Warning',
            }
          : {
              reason: 'ERDMADriverAction',
              message: `modprobe ${args}: ${action.why}`,
              type: 'Normal',
            },
      );
    }
    const failed = r.done.find((d) => d.error);
    const stuck = r.decision.status === 'deferred' || r.decision.status === 'manual';
    this.why = failed
      ? `modprobe ${failed.action.args.join(' ')} failed: ${failed.error}`
      : stuck
        ? r.decision.detail
        : undefined;
    if (stuck && this.mismatch.due('mode', r.decision.detail)) {
      const told = await this.o.events.node({
        reason: 'ERDMADriverModeMismatch',
        message: r.decision.detail,
        type: 'Warning',
      });
      if (told) this.mismatch.told('mode', r.decision.detail);
    }
  }
}
