// The node agent's duties besides the device plugin, and when each runs (./duty.ts for their
// shape). One refresh runs, in order: driver mode (agent.manageDriver) → devices → eRDMA ENIs
// (agent.manageEni) → capability → node labels → host pnet, every agent.refreshMs. The CNI chain
// is checked every few seconds and whenever the conf dir changes; the pods duty whenever the pod
// watch changes and a few times per podGraceMs; SMC sampling every agent.smcSampleMs. Each duty
// can be switched off; the agent is ready when no duty has a problem.
import { dirname, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClient } from '../cluster/client.js';
import { PRELOAD } from '../constants.js';
import { WatchedSet } from '../cluster/watch.js';
import type { AgentConfig } from '../config/schema.js';
import { NativeBinary } from '../native/binary.js';
import { readiness, realClock, Schedule, type Clock, type Duty, type Problem } from './duty.js';
import { ApiEventSink, NO_EVENTS, type EventSink } from './events.js';
import { mirrorDeviceCounters, type AgentMetrics } from './metrics.js';
import { CniInstaller, UNINSTALL_MARKER } from './network/cni-install.js';
import { EniDuty, HostPnetDuty } from './network/duties.js';
import { onEcs, PodNetworksDuty, POD_NETWORKS_MS } from './network/pod-networks.js';
import type { Capability } from './node/capability.js';
import type { RdmaDevice } from '../devices/discovery.js';
import { defaultModprobe } from './node/driver.js';
import { CapabilityDuty, DevicesDuty, DriverDuty, LabelsDuty } from './node/duties.js';
import { NodeLabeler } from './node/labels.js';
import { readHeldBack } from '../kubelet/held-back.js';
import { Mechanisms } from './node/mechanisms.js';
import { readDeviceCounters } from './observe/counters.js';
import { PodsDuty, type PodSource } from './pod-duty.js';
import { SmcDuty } from './observe/smc-sampling.js';
import { keptPod, type NodePod } from './pod.js';
import type { PodSmc } from './observe/smc.js';
import { inHost } from './host.js';

/** Host path as the agent sees it (below hostRoot). */
export const hostPath = (a: AgentConfig, p: string): string => inHost(a.hostRoot, p);

const present = (duties: readonly (Duty | undefined)[]): Duty[] =>
  duties.filter((d): d is Duty => d !== undefined);

/** How often the CNI chain is checked besides when its directory changes. */
const CNI_CHECK_MS = 5000;

export interface NodeAgentOptions {
  readonly config: AgentConfig;
  readonly logger: Logger;
  readonly metrics: AgentMetrics;
  readonly discover: () => RdmaDevice[];
  /** Needed for labels, pod events and Node events; without it those duties say so. */
  readonly client?: KubeClient;
  /** Time, for tests; real by default. */
  readonly clock?: Clock;
  /** Where Events go (default: the API server, when there is one). */
  readonly events?: EventSink;
  /** The pods of this node (default: a watch of the API server, when there is one). */
  readonly pods?: PodSource;
}

export class NodeAgent {
  private readonly a: AgentConfig;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly binary: NativeBinary;
  private readonly events: EventSink;
  private readonly devices: DevicesDuty;
  private readonly capabilityDuty: CapabilityDuty;
  /** Every duty, in the order of the readiness answer. */
  private readonly duties: Duty[] = [];
  private readonly refreshChain: Duty[] = [];
  private readonly cni: CniInstaller | undefined;
  private readonly podsDuty: PodsDuty | undefined;
  private readonly smcDuty: SmcDuty;
  private readonly podNetworks: PodNetworksDuty | undefined;
  private readonly schedules: Schedule[] = [];
  private refreshSchedule: Schedule | undefined;
  private cniSchedule: Schedule | undefined;
  private podsSchedule: Schedule | undefined;
  private smcSchedule: Schedule | undefined;
  private podNetworksSchedule: Schedule | undefined;
  private closed = false;

  constructor(private readonly opts: NodeAgentOptions) {
    this.a = opts.config;
    this.log = opts.logger;
    this.clock = opts.clock ?? realClock;
    this.binary = new NativeBinary(this.a.nativeBinary);
    const missingNode = this.needNode();
    this.events =
      opts.events ??
      (missingNode
        ? NO_EVENTS
        : new ApiEventSink(opts.client!, this.a.nodeName!, opts.metrics, this.clock, this.log));
    this.devices = new DevicesDuty(opts.discover);
    this.capabilityDuty = new CapabilityDuty({
      procRoot: this.a.procRoot,
      hostRoot: this.a.hostRoot,
      devices: () => this.devices.current,
      eniProblem: () => eni?.problem(),
      tcp2smcNodes: this.a.tcp2smcNodes,
      mechanisms: new Mechanisms({
        binary: this.binary,
        procRoot: this.a.procRoot,
        bpfDir: hostPath(this.a, this.a.bpfDir),
        logger: this.log,
      }),
      metrics: opts.metrics,
      logger: this.log,
    });
    const driver = this.a.manageDriver ? this.driverDuty() : undefined;
    const eni = this.a.manageEni ? this.eniDuty() : undefined;
    const labels = this.a.nodeLabels ? this.labelsDuty(missingNode) : undefined;
    const pnet = this.a.hostPnet ? this.pnetDuty() : undefined;
    this.refreshChain = present([driver, this.devices, eni, this.capabilityDuty, labels, pnet]);
    this.cni = this.a.cniInstall ? this.cniInstaller() : undefined;
    this.podsDuty = this.a.podEvents ? this.newPodsDuty(missingNode) : undefined;
    // Sampled on its period when agent.smcSampleMs > 0; sampleSmc() reads at once either way.
    this.smcDuty = this.newSmcDuty();
    const publish =
      this.a.podNetworks === 'on' || (this.a.podNetworks === 'auto' && onEcs(this.a.hostRoot));
    this.podNetworks = publish && !missingNode ? this.podNetworksDuty() : undefined;
    this.duties = present([
      ...this.refreshChain,
      this.cni,
      this.podsDuty,
      this.smcDuty,
      this.podNetworks,
    ]);
  }

  private podNetworksDuty(): PodNetworksDuty {
    return new PodNetworksDuty({
      metadata: {
        baseUrl: this.a.metadataUrl,
        timeoutMs: this.a.metadataTimeoutMs,
        retries: this.a.metadataRetries,
      },
      labeler: new NodeLabeler(this.opts.client!, this.a.nodeName!, this.log),
      logger: this.log,
    });
  }

  /** One publication of the node's pod networks now (agent.podNetworks); what was published. */
  async publishPodNetworks(): Promise<readonly string[] | undefined> {
    if (!this.podNetworks) return undefined;
    await (this.podNetworksSchedule?.now() ?? this.podNetworks.pass());
    return this.podNetworks.published;
  }

  /** Why duties that speak to the API server about this node cannot (undefined when they can). */
  private needNode(): string | undefined {
    if (!this.opts.client) return 'needs a Kubernetes API connection';
    if (!this.a.nodeName) return 'needs agent.nodeName (ERDMA_SMCR_NODE_NAME from spec.nodeName)';
    return undefined;
  }

  private driverDuty(): DriverDuty {
    return new DriverDuty({
      prefer: this.a.preferDriver,
      hostRoot: this.a.hostRoot,
      procRoot: this.a.procRoot,
      modprobe: this.a.modprobe ?? defaultModprobe(this.a.hostRoot),
      logger: this.log,
      events: this.events,
      metrics: this.opts.metrics,
      clock: this.clock,
    });
  }

  private eniDuty(): EniDuty {
    return new EniDuty({
      binary: this.binary,
      metadata: {
        baseUrl: this.a.metadataUrl,
        timeoutMs: this.a.metadataTimeoutMs,
        retries: this.a.metadataRetries,
      },
      mtu: this.a.eniMtu,
      logger: this.log,
      devices: () => this.devices.current,
      events: this.events,
      metrics: this.opts.metrics,
      clock: this.clock,
    });
  }

  private labelsDuty(missing: string | undefined): LabelsDuty {
    const labeler = missing
      ? undefined
      : new NodeLabeler(this.opts.client!, this.a.nodeName!, this.log);
    const stateFile = hostPath(this.a, this.a.devicePluginStateFile);
    return new LabelsDuty(
      labeler,
      () => this.capabilityDuty.current,
      this.log,
      missing && `node labels ${missing}`,
      () => readHeldBack(stateFile),
      this.events,
    );
  }

  private pnetDuty(): HostPnetDuty {
    return new HostPnetDuty({
      binary: this.binary,
      pnetIdFile: hostPath(this.a, this.a.pnetIdFile),
      logger: this.log,
      devices: () => this.devices.current,
      capable: () => this.capabilityDuty.current?.capable === true,
      metrics: this.opts.metrics,
    });
  }

  /** The CNI installer for this node's configured directories. */
  private cniInstaller(): CniInstaller {
    return new CniInstaller({
      confDir: hostPath(this.a, this.a.cniConfDir),
      binDir: hostPath(this.a, this.a.cniBinDir),
      binarySource: this.binary.path,
      preload: {
        source: join(dirname(this.binary.path), PRELOAD.library),
        dir: hostPath(this.a, this.a.preloadDir),
      },
      pnetIdFile: this.a.pnetIdFile,
      stateDir: this.a.cniStateDir,
      logFile: this.a.cniLogFile,
      logger: this.log,
      uninstallMarker: join(hostPath(this.a, this.a.cniStateDir), UNINSTALL_MARKER),
      onStatus: (p) => this.opts.metrics.cniChained.set(p ? 0 : 1),
      wake: () => this.cniSchedule?.soon(150),
    });
  }

  private podSource(missing: string | undefined): PodSource | undefined {
    if (this.opts.pods) return this.opts.pods;
    if (missing) return undefined;
    return new WatchedSet<V1Pod, NodePod>(this.opts.client!, {
      path: '/api/v1/pods',
      fieldSelector: `spec.nodeName=${this.a.nodeName}`,
      transform: keptPod,
      logger: this.log,
      onChange: () => void this.podsSchedule?.now(),
    });
  }

  private newPodsDuty(missing: string | undefined): PodsDuty {
    const stateDir = hostPath(this.a, this.a.cniStateDir);
    const source = this.podSource(missing);
    return new PodsDuty({
      source,
      ...(source ? {} : { missing: `pod events ${missing}` }),
      stateDir,
      toldFile: hostPath(this.a, this.a.podEventsFile),
      procRoot: this.a.procRoot,
      podGraceMs: this.a.podGraceMs,
      lateApply: this.a.lateApply,
      // The agent runs the plugin itself, so the paths are the agent's view of the host.
      late: {
        binary: this.binary,
        pnetIdFile: hostPath(this.a, this.a.pnetIdFile),
        stateDir,
        logFile: hostPath(this.a, this.a.cniLogFile),
      },
      events: this.events,
      metrics: this.opts.metrics,
      clock: this.clock,
      logger: this.log,
    });
  }

  private newSmcDuty(): SmcDuty {
    return new SmcDuty({
      binary: this.binary,
      stateDir: hostPath(this.a, this.a.cniStateDir),
      hostRoot: this.a.hostRoot,
      procRoot: this.a.procRoot,
      pods: () => this.podsDuty?.pods(),
      fallbackEventMs: this.a.fallbackEventMs,
      events: this.events,
      metrics: this.opts.metrics,
      clock: this.clock,
      logger: this.log,
    });
  }

  private schedule(name: string, run: () => Promise<void>, periodMs: number): Schedule {
    const s = new Schedule(run, periodMs, this.clock, (err) =>
      this.log.error({ err, duty: name }, 'duty pass failed'),
    );
    this.schedules.push(s);
    return s;
  }

  /** Starts every duty, runs the first refresh, and plans the rest. */
  async start(): Promise<void> {
    for (const d of this.duties) await d.start?.();
    this.refreshSchedule = this.schedule('refresh', () => this.refreshPass(), this.a.refreshMs);
    await this.refreshSchedule.now();
    if (this.cni) this.cniSchedule = this.schedule('cni', () => this.cni!.pass(), CNI_CHECK_MS);
    this.cniSchedule?.startIn(CNI_CHECK_MS);
    if (this.podsDuty) {
      this.podsSchedule = this.schedule(
        'pods',
        () => this.podsDuty!.pass(),
        Math.max(1000, Math.min(5000, this.a.podGraceMs / 3)),
      );
      await this.podsSchedule.now();
    }
    mirrorDeviceCounters(this.opts.metrics.registry, () =>
      this.closed
        ? []
        : this.opts.discover().flatMap((d) => readDeviceCounters(this.a.hostRoot, d.name)),
    );
    if (this.a.smcSampleMs > 0) {
      this.smcSchedule = this.schedule('smc', () => this.smcDuty.pass(), this.a.smcSampleMs);
      this.smcSchedule.startIn(0);
    }
    if (this.podNetworks) {
      const duty = this.podNetworks;
      this.podNetworksSchedule = this.schedule('pod-networks', () => duty.pass(), POD_NETWORKS_MS);
      this.podNetworksSchedule.startIn(0);
    }
  }

  private async refreshPass(): Promise<void> {
    for (const d of this.refreshChain) await d.pass();
  }

  /** One refresh (driver, devices, ENIs, capability, labels, host pnet) now; the capability found. */
  async refresh(): Promise<Capability | undefined> {
    await (this.refreshSchedule?.now() ?? this.refreshPass());
    return this.capabilityDuty.current;
  }

  /** The capability found by the last refresh. */
  get last(): Capability | undefined {
    return this.capabilityDuty.current;
  }

  /** One pass of the pods duty now. */
  async podsPass(): Promise<void> {
    await (this.podsSchedule?.now() ?? this.podsDuty?.pass());
  }

  /** The pods of this node as the agent last listed them (empty without a pod watch). */
  knownPods(): readonly NodePod[] {
    return this.podsDuty?.pods() ?? [];
  }

  /** One SMC sample now; the pods read. */
  async sampleSmc(): Promise<PodSmc[]> {
    await (this.smcSchedule?.now() ?? this.smcDuty.pass());
    return this.smcDuty.last;
  }

  /** Undefined when every enabled duty is in place; else what is not, duty by duty. */
  readiness(): Problem {
    return readiness(this.duties);
  }

  /** Removes our CNI entry, binary and preload library, and unpins the IPPROTO_SMC program. */
  async uninstallCni(): Promise<void> {
    (this.cni ?? this.cniInstaller()).uninstall();
    try {
      await this.binary.bpfUnload(hostPath(this.a, this.a.bpfDir));
    } catch (err) {
      this.log.warn({ reason: (err as Error).message }, 'cannot unpin the IPPROTO_SMC program');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const s of this.schedules) await s.close();
    for (const d of this.duties) await d.close?.();
  }
}
