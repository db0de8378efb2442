// The network room's duties (src/agent/duty.ts for their shape): the eRDMA ENIs configured from
// the instance metadata (agent.manageEni), and the host side of the pnet table. The CNI chain's
// duty is its installer (./cni-install.ts).
import type { Clock, Duty, Problem } from '../duty.js';
import { Told, type EventSink } from '../events.js';
import type { AgentMetrics } from '../metrics.js';
import type { RdmaDevice } from '../../devices/discovery.js';
import { MetadataClient, type MetadataOptions } from './ecs-metadata.js';
import { eniProblem, reconcileEnis, type EniPassOptions, type EniResult } from './eni.js';
import { ensureHostPnet, type HostPnetOptions } from './host-pnet.js';

/**
 * The ENI duty (agent.manageEni): configures the secondary eRDMA ENIs of the devices found in
 * this refresh; an ENI someone else configured differently is told on the Node once.
 */
export class EniDuty implements Duty {
  readonly name = 'eni';
  results: EniResult[] = [];
  private readonly foreign: Told;

  constructor(
    private readonly o: Omit<EniPassOptions, 'metadata'> & {
      readonly metadata: MetadataOptions;
      readonly devices: () => readonly RdmaDevice[];
      readonly events: EventSink;
      readonly metrics: AgentMetrics;
      readonly clock: Clock;
    },
  ) {
    this.foreign = new Told(o.clock);
  }

  private client: MetadataClient | undefined;

  problem(): string | undefined {
    return eniProblem(this.results);
  }

  async pass(): Promise<void> {
    this.client ??= new MetadataClient(this.o.metadata);
    this.results = await reconcileEnis(this.o.devices(), { ...this.o, metadata: this.client });
    for (const status of [
      'primary',
      'configured',
      'already-configured',
      'foreign',
      'failed',
    ] as const) {
      this.o.metrics.enis.set({ status }, this.results.filter((r) => r.status === status).length);
    }
    for (const r of this.results) {
      if (r.status !== 'foreign' || !this.foreign.due(r.dev, r.detail)) continue;
      const told = await this.o.events.node({
        reason: 'ERDMAENIAddressMismatch',
        message: `${r.device}: ${r.detail}`,
        type: 'Warning',
      });
      if (told) this.foreign.told(r.dev, r.detail);
    }
  }
}

/** The host pnet duty: the pnet entries and the node file, while the node is capable. */
export class HostPnetDuty implements Duty {
  readonly name = 'pnet';
  private why: Problem;

  constructor(
    private readonly o: HostPnetOptions & {
      readonly devices: () => readonly RdmaDevice[];
      readonly capable: () => boolean;
      readonly metrics: AgentMetrics;
    },
  ) {}

  problem(): Problem {
    return this.why;
  }

  async pass(): Promise<void> {
    if (!this.o.capable()) return;
    const r = await ensureHostPnet(this.o.devices(), this.o);
    this.o.metrics.pnetErrors.set(r.errors.length);
    this.why = r.errors.length > 0 ? r.errors.join('; ') : undefined;
  }
}
