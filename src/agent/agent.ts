// The node agent's duties besides the device plugin, on one schedule: capability → labels →
// host pnet; the CNI chain kept in place; SMC-R pods that stayed on TCP reported. Each duty can be
// switched off; each reports into metrics and the readiness answer.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../cluster/client.js';
import type { Logger } from 'pino';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { apiReason, WatchedSet } from '../cluster/watch.js';
import type { AgentConfig } from '../config/schema.js';
import { capability, capabilityLabels, hostFacts, type Capability } from './node/capability.js';
import { CniInstaller, UNINSTALL_MARKER } from './network/cni-install.js';
import type { RdmaDevice } from './node/discovery.js';
import { defaultModprobe, reconcileDriver } from './node/driver.js';
import { readDeviceCounters, type PortCounters } from './observe/counters.js';
import { eniProblem, MetadataClient, reconcileEnis, type EniResult } from './network/eni.js';
import { collectPodSmc, describeReason, reasonLabel, type PodSmc } from './observe/smc.js';
import { ensureHostPnet } from './network/host-pnet.js';
import { NodeLabeler } from './node/labels.js';
import {
  findPodNetns,
  judge,
  lateApply,
  readRecords,
  removeLateRecords,
  type OutcomeKind,
  type PodOutcome,
} from './observe/pods.js';

export const DEFAULT_NATIVE_BINARY = fileURLToPath(
  new URL('../../native/build/erdma-smcr', import.meta.url),
);

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
    help: 'Established SMC connections of each SMC-R pod on this node by mode (SMCR, SMCD, TCP: fell back), from smc_diag at the last sample.',
    labelNames: ['namespace', 'pod', 'mode'] as const,
    registers: [this.registry],
  });
  readonly podFallbacks = new Gauge({
    name: 'erdma_smcr_pod_fallback_connections',
    help: 'Connections of each SMC-R pod that fell back to TCP, by decoded reason (SMC_CLC_DECL_ name), at the last sample.',
    labelNames: ['namespace', 'pod', 'reason'] as const,
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
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }
}

/** Host path as the agent sees it (below hostRoot). */
export const hostPath = (a: AgentConfig, p: string): string => join(a.hostRoot, p);

export interface NodeAgentOptions {
  readonly config: AgentConfig;
  readonly logger: Logger;
  readonly metrics: AgentMetrics;
  readonly discover: () => RdmaDevice[];
  /** Needed for labels and pod events; without it those duties are off. */
  readonly client?: KubeClient;
  readonly now?: () => number;
}

export class NodeAgent {
  private readonly a: AgentConfig;
  private readonly log: Logger;
  private readonly binary: string;
  private labeler: NodeLabeler | undefined;
  private cni: CniInstaller | undefined;
  private pods: WatchedSet<V1Pod> | undefined;
  /** Set once Events may be posted (the pod watch or a Node event started). */
  private events: KubeClient | undefined;
  private timer: NodeJS.Timeout | undefined;
  private podTimer: NodeJS.Timeout | undefined;
  private readonly told = new Map<string, string>();
  /** SMCRFallback Events: pod uid → reasons told and when. */
  private readonly toldFallback = new Map<string, { key: string; at: number }>();
  private smcTimer: NodeJS.Timeout | undefined;
  private smcPass: Promise<PodSmc[]> | undefined;
  /** The driver situation last reported on the Node (deferred or manual detail). */
  private toldDriver = '';
  /** Foreign ENIs already reported on the Node (dev → detail). */
  private readonly toldEni = new Map<string, string>();
  private metadata: MetadataClient | undefined;
  private readonly lateTried = new Set<string>();
  private podPass: Promise<void> | undefined;
  private closed = false;
  last: Capability | undefined;
  problems = new Map<string, string>();

  constructor(private readonly opts: NodeAgentOptions) {
    this.a = opts.config;
    this.log = opts.logger;
    this.binary = this.a.nativeBinary ?? DEFAULT_NATIVE_BINARY;
  }

  private needNode(duty: string): string | undefined {
    if (!this.opts.client) return `${duty} needs a Kubernetes API connection`;
    if (!this.a.nodeName)
      return `${duty} needs agent.nodeName (ERDMA_SMCR_NODE_NAME from spec.nodeName)`;
    return undefined;
  }

  async start(): Promise<void> {
    const kc = this.opts.client;
    if (this.a.nodeLabels) {
      const why = this.needNode('node labels');
      if (why) this.problems.set('labels', why);
      else this.labeler = new NodeLabeler(kc as KubeClient, this.a.nodeName as string, this.log);
    }
    if (this.a.cniInstall) {
      this.cni = this.cniInstaller((p) => {
        this.opts.metrics.cniChained.set(p ? 0 : 1);
        this.setProblem('cni', p);
      });
      this.cni.start();
    }
    await this.refresh();
    if (this.a.podEvents) await this.startPodWatch();
    this.deviceCounterMetrics();
    if (this.a.smcSampleMs > 0) this.scheduleSmc(0);
  }

  /** Device traffic as Prometheus counters, read from sysfs at each scrape. */
  private deviceCounterMetrics(): void {
    const labelNames = ['device', 'port', 'direction'] as const;
    const read = (): PortCounters[] =>
      this.closed
        ? []
        : this.opts.discover().flatMap((d) => readDeviceCounters(this.a.hostRoot, d.name));
    const mirror = (
      name: string,
      help: string,
      pick: (c: PortCounters, dir: 'tx' | 'rx') => number | undefined,
    ): void => {
      if (this.opts.metrics.registry.getSingleMetric(name)) return;
      new Counter({
        name,
        help,
        labelNames,
        registers: [this.opts.metrics.registry],
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

  private scheduleSmc(delay: number): void {
    if (this.closed) return;
    this.smcTimer = setTimeout(
      () => void this.sampleSmc().finally(() => this.scheduleSmc(this.a.smcSampleMs)),
      delay,
    );
    this.smcTimer.unref();
  }

  /** Reads every SMC-R pod's connections (one native call), updates the pod metrics, tells fallbacks. */
  sampleSmc(): Promise<PodSmc[]> {
    this.smcPass ??= this.readPodsSmc().finally(() => (this.smcPass = undefined));
    return this.smcPass;
  }

  private async readPodsSmc(): Promise<PodSmc[]> {
    const live = this.pods
      ? new Map(this.pods.objects().map((p) => [p.metadata?.uid ?? '', p]))
      : undefined;
    const records = [...readRecords(hostPath(this.a, this.a.cniStateDir)).values()]
      .filter((r) => r.netns && r.podName && (!live || live.has(r.podUid)))
      .map((r) => ({ namespace: r.podNamespace, name: r.podName, uid: r.podUid, netns: r.netns }));
    let pods: PodSmc[];
    try {
      pods = await collectPodSmc(records, {
        binary: this.binary,
        hostRoot: this.a.hostRoot,
        byPod: (uid) => findPodNetns(this.a.procRoot, uid),
      });
    } catch (err) {
      this.log.warn({ err }, 'cannot read the SMC connections of pods');
      return [];
    }
    const m = this.opts.metrics;
    m.podConnections.reset();
    m.podFallbacks.reset();
    m.podBytes.reset();
    m.samplePods.set({ result: 'ok' }, pods.filter((p) => p.summary).length);
    m.samplePods.set({ result: 'error' }, pods.filter((p) => !p.summary).length);
    const now = (this.opts.now ?? Date.now)();
    for (const p of pods) {
      const s = p.summary;
      if (!s) continue;
      const who = { namespace: p.namespace, pod: p.name };
      for (const mode of ['SMCR', 'SMCD', 'TCP'] as const)
        m.podConnections.set({ ...who, mode }, s.byMode[mode]);
      for (const [code, n] of Object.entries(s.fallbacks))
        m.podFallbacks.inc({ ...who, reason: reasonLabel(code) }, n);
      if (s.otherFallbacks > 0) m.podFallbacks.inc({ ...who, reason: 'OTHER' }, s.otherFallbacks);
      m.podBytes.set({ ...who, direction: 'tx' }, s.txBytes);
      m.podBytes.set({ ...who, direction: 'rx' }, s.rxBytes);
      const pod = live?.get(p.uid);
      if (pod && s.byMode.TCP > 0) await this.tellFallback(pod, p, now);
    }
    for (const uid of [...this.toldFallback.keys()])
      if (!records.some((r) => r.uid === uid)) this.toldFallback.delete(uid);
    return pods;
  }

  /** One SMCRFallback Event per pod and set of reasons per fallbackEventMs. */
  private async tellFallback(pod: V1Pod, p: PodSmc, now: number): Promise<void> {
    const s = p.summary!;
    const codes = Object.keys(s.fallbacks).sort();
    const key = codes.join(',') || 'other';
    const last = this.toldFallback.get(p.uid);
    if (last && last.key === key && now - last.at < this.a.fallbackEventMs) return;
    if (!this.events) return;
    const reasons = codes.map((c) => {
      const r = describeReason(c);
      return `${r.name} (${c}, ${s.fallbacks[c]} connection(s)): ${r.meaning}`;
    });
    const total = s.byMode.SMCR + s.byMode.SMCD + s.byMode.TCP;
    const message = `${s.byMode.TCP} of ${total} connection(s) fell back to TCP. ${reasons.join(' ') || 'Reason not in the sample.'} See erdma-smcr status --pod ${p.namespace}/${p.name}.`;
    try {
      await this.postEvent(
        p.namespace,
        this.eventFor(pod, {
          kind: 'tcp',
          type: 'Warning',
          reason: 'SMCRFallback',
          message: message.slice(0, 1000),
        }),
      );
      this.toldFallback.set(p.uid, { key, at: now });
      this.opts.metrics.events.inc({ reason: 'SMCRFallback' });
    } catch (err) {
      this.log.warn(
        { pod: `${p.namespace}/${p.name}`, reason: apiReason(err) },
        'cannot post the SMCRFallback event; will retry',
      );
    }
  }

  /** The CNI installer for this node's configured directories; onStatus hears about chaining problems. */
  private cniInstaller(onStatus?: (problem: string) => void): CniInstaller {
    return new CniInstaller({
      confDir: hostPath(this.a, this.a.cniConfDir),
      binDir: hostPath(this.a, this.a.cniBinDir),
      binarySource: this.binary,
      pnetIdFile: this.a.pnetIdFile,
      stateDir: this.a.cniStateDir,
      logFile: this.a.cniLogFile,
      logger: this.log,
      uninstallMarker: join(hostPath(this.a, this.a.cniStateDir), UNINSTALL_MARKER),
      ...(onStatus ? { onStatus } : {}),
    });
  }

  private setProblem(duty: string, problem: string): void {
    if (problem) this.problems.set(duty, problem);
    else this.problems.delete(duty);
  }

  /** '' when every enabled duty is in place; else what is not. */
  readiness(): string {
    return [...this.problems.entries()].map(([k, v]) => `${k}: ${v}`).join('; ');
  }

  /** One pass of capability, labels and host pnet; then again after refreshMs. */
  async refresh(): Promise<Capability> {
    clearTimeout(this.timer);
    if (this.a.manageDriver) await this.driverPass();
    const devices = this.opts.discover();
    const enis = this.a.manageEni ? await this.enisPass(devices) : [];
    const cap = capability(hostFacts(this.a.procRoot, this.a.hostRoot), devices, eniProblem(enis));
    if (this.last?.capable !== cap.capable || this.last?.reason !== cap.reason) {
      this.log.info(
        { capable: cap.capable, driverMode: cap.driverMode, reason: cap.detail },
        'node SMC-R capability',
      );
    }
    this.last = cap;
    const m = this.opts.metrics;
    m.capable.set(cap.capable ? 1 : 0);
    m.devices.set({ healthy: 'true' }, devices.filter((d) => d.healthy).length);
    m.devices.set({ healthy: 'false' }, devices.filter((d) => !d.healthy).length);
    if (this.labeler) {
      try {
        await this.labeler.apply(capabilityLabels(cap));
        this.setProblem('labels', '');
      } catch (err) {
        this.setProblem('labels', `cannot label node ${this.a.nodeName}: ${apiReason(err)}`);
        this.log.warn({ reason: apiReason(err) }, 'node labels not updated; will retry');
      }
    }
    if (this.a.hostPnet && cap.capable) {
      const r = await ensureHostPnet(devices, {
        binary: this.binary,
        pnetIdFile: hostPath(this.a, this.a.pnetIdFile),
        logger: this.log,
      });
      m.pnetErrors.set(r.errors.length);
      this.setProblem('pnet', r.errors.join('; '));
    }
    if (!this.closed) {
      this.timer = setTimeout(
        () =>
          void this.refresh().catch((e: unknown) => this.log.error({ err: e }, 'refresh failed')),
        this.a.refreshMs,
      );
      this.timer.unref();
    }
    return cap;
  }

  /** agent.manageDriver: the driver mode asked for and the modules it needs; every action becomes a Node Event. */
  private async driverPass(): Promise<void> {
    const r = await reconcileDriver({
      prefer: this.a.preferDriver,
      hostRoot: this.a.hostRoot,
      procRoot: this.a.procRoot,
      modprobe: this.a.modprobe ?? defaultModprobe(this.a.hostRoot),
      logger: this.log,
    });
    for (const { action, error } of r.done) {
      const args = action.args.join(' ');
      this.opts.metrics.driverActions.inc({ modprobe: args, result: error ? 'failed' : 'ok' });
      if (error)
        await this.nodeEvent(
          'ERDMADriverActionFailed',
          `modprobe ${args} (${action.why}) failed: ${error.slice(0, 300)}`,
        );
      else await this.nodeEvent('ERDMADriverAction', `modprobe ${args}: ${action.why}`, 'Normal');
    }
    const failed = r.done.find((d) => d.error);
    const problem = failed
      ? `modprobe ${failed.action.args.join(' ')} failed: ${failed.error}`
      : r.decision.status === 'deferred' || r.decision.status === 'manual'
        ? r.decision.detail
        : '';
    this.setProblem('driver', problem);
    if (
      (r.decision.status === 'deferred' || r.decision.status === 'manual') &&
      this.toldDriver !== r.decision.detail
    ) {
      if (await this.nodeEvent('ERDMADriverModeMismatch', r.decision.detail))
        this.toldDriver = r.decision.detail;
    }
  }

  /** agent.manageEni: configures the secondary eRDMA ENIs; reports foreign ones on the Node once. */
  private async enisPass(devices: readonly RdmaDevice[]): Promise<EniResult[]> {
    this.metadata ??= new MetadataClient({
      baseUrl: this.a.metadataUrl,
      timeoutMs: this.a.metadataTimeoutMs,
      retries: this.a.metadataRetries,
    });
    const results = await reconcileEnis(devices, {
      binary: this.binary,
      metadata: this.metadata,
      mtu: this.a.eniMtu,
      logger: this.log,
    });
    for (const status of [
      'primary',
      'configured',
      'already-configured',
      'foreign',
      'failed',
    ] as const) {
      this.opts.metrics.enis.set({ status }, results.filter((r) => r.status === status).length);
    }
    this.setProblem('eni', eniProblem(results));
    for (const r of results) {
      if (r.status !== 'foreign' || this.toldEni.get(r.dev) === r.detail) continue;
      if (await this.nodeEvent('ERDMAENIAddressMismatch', `${r.device}: ${r.detail}`))
        this.toldEni.set(r.dev, r.detail);
    }
    return results;
  }

  /** Posts an Event on this Node; false when it could not (no API, or the call failed). */
  private async nodeEvent(
    reason: string,
    message: string,
    type: 'Normal' | 'Warning' = 'Warning',
  ): Promise<boolean> {
    if (this.needNode('node events') || !this.opts.client) return false;
    this.events ??= this.opts.client;
    const node = this.a.nodeName as string;
    try {
      await this.postEvent(
        'default',
        this.event(
          { generateName: `${node}.` },
          { apiVersion: 'v1', kind: 'Node', name: node, uid: node },
          { reason, message, type },
        ),
      );
      this.opts.metrics.events.inc({ reason });
      return true;
    } catch (err) {
      this.log.warn({ reason: apiReason(err) }, 'cannot post a Node event; will retry');
      return false;
    }
  }

  private postEvent(namespace: string, body: CoreV1Event): Promise<unknown> {
    return (this.events as KubeClient).request(
      'POST',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
      { body },
    );
  }

  private async startPodWatch(): Promise<void> {
    const why = this.needNode('pod events');
    if (why) return void this.problems.set('pods', why);
    const client = (this.events ??= this.opts.client as KubeClient);
    this.pods = new WatchedSet<V1Pod>(client, {
      path: '/api/v1/pods',
      fieldSelector: `spec.nodeName=${this.a.nodeName}`,
      logger: this.log,
      onChange: () => void this.podsPass(),
      onStale: (s) => this.setProblem('pods', s ? 'pod watch broken; retrying' : ''),
    });
    if (!(await this.pods.start())) this.problems.set('pods', 'pods on this node not listed yet');
    const tick = (): void => {
      if (this.closed) return;
      this.podTimer = setTimeout(
        () => void this.podsPass().then(tick),
        Math.max(1000, Math.min(5000, this.a.podGraceMs / 3)),
      );
      this.podTimer.unref();
    };
    tick();
  }

  /** Judges every SMC-R pod of this node once; posts each new verdict as an Event. */
  podsPass(): Promise<void> {
    this.podPass ??= this.judgePods().finally(() => (this.podPass = undefined));
    return this.podPass;
  }

  private async judgePods(): Promise<void> {
    if (!this.pods) return;
    const records = readRecords(hostPath(this.a, this.a.cniStateDir));
    const now = (this.opts.now ?? Date.now)();
    const counts: Record<OutcomeKind, number> = {
      applied: 0,
      partial: 0,
      tcp: 0,
      missed: 0,
      late: 0,
    };
    const live = new Set<string>();
    for (const pod of this.pods.objects()) {
      const uid = pod.metadata?.uid ?? '';
      live.add(uid);
      let v = judge(pod, records.get(uid), now, this.a.podGraceMs);
      if (!v) continue;
      if (v.kind === 'missed' && this.a.lateApply && !this.lateTried.has(uid))
        v = await this.tryLate(pod, v);
      counts[v.kind]++;
      await this.tell(pod, v);
    }
    this.forgetGone(live, now);
    for (const [k, n] of Object.entries(counts)) this.opts.metrics.pods.set({ outcome: k }, n);
  }

  /** Drops what we keep for pods that left this node, and their late-apply records. */
  private forgetGone(live: ReadonlySet<string>, now: number): void {
    for (const uid of [...this.told.keys()]) if (!live.has(uid)) this.told.delete(uid);
    for (const uid of [...this.lateTried]) if (!live.has(uid)) this.lateTried.delete(uid);
    // Only from a current list: a broken watch must not make live pods look gone.
    if (!this.pods?.fresh) return;
    const removed = removeLateRecords(
      hostPath(this.a, this.a.cniStateDir),
      live,
      now - this.a.podGraceMs,
    );
    if (removed.length > 0)
      this.log.info({ files: removed }, 'removed late-apply records of pods that left this node');
  }

  private async tryLate(pod: V1Pod, missed: PodOutcome): Promise<PodOutcome> {
    const uid = pod.metadata?.uid ?? '';
    const netns = findPodNetns(this.a.procRoot, uid);
    // No process yet (or no hostPID): tell now, try again next pass.
    if (!netns)
      return {
        ...missed,
        message: `${missed.message} (no process of the pod found to apply it late)`,
      };
    this.lateTried.add(uid);
    // The agent runs the plugin itself, so the paths are the agent's view of the host.
    const err = await lateApply(pod, netns, {
      binary: this.binary,
      pnetIdFile: hostPath(this.a, this.a.pnetIdFile),
      stateDir: hostPath(this.a, this.a.cniStateDir),
      logFile: hostPath(this.a, this.a.cniLogFile),
    });
    if (err)
      return {
        ...missed,
        message: `${missed.message} Applying it late failed: ${err.slice(0, 300)}`,
      };
    const record = readRecords(hostPath(this.a, this.a.cniStateDir)).get(uid);
    return (record && judge(pod, record, 0, 0)) ?? missed;
  }

  private eventFor(pod: V1Pod, v: PodOutcome): CoreV1Event {
    const md = pod.metadata ?? {};
    return this.event(
      { generateName: `${md.name}.`, namespace: md.namespace },
      { apiVersion: 'v1', kind: 'Pod', name: md.name, namespace: md.namespace, uid: md.uid },
      { reason: v.reason, message: v.message, type: v.type },
    );
  }

  /** An Event from this agent about `involvedObject`, happening now, once. */
  private event(
    metadata: CoreV1Event['metadata'],
    involvedObject: CoreV1Event['involvedObject'],
    what: Pick<CoreV1Event, 'reason' | 'message' | 'type'>,
  ): CoreV1Event {
    const now = new Date((this.opts.now ?? Date.now)());
    const node = this.a.nodeName ?? '';
    return {
      metadata,
      involvedObject,
      ...what,
      source: { component: 'erdma-smcr-agent', host: node },
      reportingComponent: 'erdma-smcr-agent',
      reportingInstance: node,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
  }

  /** Posts the verdict as an Event once per pod and reason. */
  private async tell(pod: V1Pod, v: PodOutcome): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const where = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    if (this.told.get(uid) === v.reason || !this.events) return;
    try {
      await this.postEvent(pod.metadata?.namespace ?? 'default', this.eventFor(pod, v));
      this.told.set(uid, v.reason);
      this.opts.metrics.events.inc({ reason: v.reason });
      this.log.info({ pod: where, reason: v.reason }, v.message);
    } catch (err) {
      this.log.warn({ pod: where, reason: apiReason(err) }, 'cannot post event; will retry');
    }
  }

  /** Removes our CNI entry and binary (agent --uninstall, or a preStop hook). */
  uninstallCni(): void {
    const installer = this.cni ?? this.cniInstaller();
    installer.close();
    installer.uninstall();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    clearTimeout(this.podTimer);
    clearTimeout(this.smcTimer);
    await this.smcPass;
    this.cni?.close();
    await this.podPass;
    await this.pods?.close();
  }
}
