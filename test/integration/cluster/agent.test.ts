// The node agent's Kubernetes duties against the real kube-apiserver, running as the agent's
// ServiceAccount (with a token from the TokenRequest API) under manifests/base/agent.yaml's RBAC: node labels, and Events on
// SMC-R pods that stayed on TCP. The pod outcomes come from our real CNI plugin run in real network
// namespaces (this kernel has no SMC, so it records the knob as missing, as on a node without the
// smc module). There is no kubelet here: pods are bound by spec.nodeName and their status (podIP)
// is written as kubelet would. The host is a temp tree (sysfs fixture, CNI dirs); the pod process
// the agent finds for a late apply is a /proc entry whose ns/net links to a real netns.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectsOf, RBAC_KINDS } from '../../helpers/manifest-objects.js';
import { NodeAgent } from '../../../src/agent/agent.js';
import { realClock, type Clock } from '../../../src/agent/duty.js';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import { discover } from '../../../src/devices/discovery.js';
import type { KubeClient } from '../../../src/cluster/client.js';
import { loadKubeClient } from '../../../src/cluster/kubeconfig.js';
import { loadConfig } from '../../../src/config/load.js';
import {
  ensureBinaries,
  startControlPlane,
  type ControlPlane,
} from '../../harness/k8s/control-plane.js';
import { cleanupNetns, createNetns, readSysctlIn, runPlugin } from '../../helpers/netns.js';
import { until } from '../../helpers/wait.js';
import { netns, requires } from '../../helpers/requires.js';
import { fixtureHost } from '../../helpers/sysfs.js';

const why = requires('the agent suite (real API server)', ensureBinaries, netns);
const NODE = 'ecs-agent-1';
const [SA_NS, SA_NAME] = ['erdma-smcr', 'erdma-smcr-agent'];
const SA = `system:serviceaccount:${SA_NS}:${SA_NAME}`;
const PLUGIN = 'native/build/erdma-smcr';

/** The real clock, moved forward by hand where a test needs time to have passed. */
let skew = 0;
const clock: Clock = { now: () => Date.now() + skew, after: realClock.after };

describe.skipIf(why !== '')('node agent against the real kube-apiserver', () => {
  let cp: ControlPlane;
  let admin: CoreV1Api;
  let kc: KubeClient;
  let agent: NodeAgent;
  /** The agent as a new process on this node makes it: same config, host and API server. */
  let newAgent: () => NodeAgent;
  let metrics: AgentMetrics;
  let dir: string;
  let host: string;
  let proc: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agent-e2e-'));
    host = fixtureHost(join(dir, 'host'));
    proc = join(dir, 'proc');
    writeFileSync(
      join(host, 'etc/os-release'),
      'PRETTY_NAME="Alibaba Cloud Linux 3.2104 U11 (OpenAnolis Edition)"\n',
    );
    mkdirSync(join(proc, 'sys/kernel'), { recursive: true });
    mkdirSync(join(proc, 'sys/net/smc'), { recursive: true });
    writeFileSync(join(proc, 'sys/kernel/osrelease'), '5.10.134-17.3.al8.x86_64\n');
    writeFileSync(join(proc, 'sys/net/smc/tcp2smc'), '0\n');

    cp = await startControlPlane();
    for (const [f, input] of [
      ['manifests/base/namespace.yaml', undefined],
      ['-', objectsOf('manifests/base/agent.yaml', RBAC_KINDS)],
    ] as const) {
      const r = await cp.kubectl(['apply', '-f', f], input);
      expect(r.status, r.stderr).toBe(0);
    }
    const nodes = ['v1', 'Node'];
    for (const name of [NODE, 'ecs-other']) {
      const r = await cp.kubectl(
        ['create', '-f', '-'],
        JSON.stringify({
          apiVersion: nodes[0],
          kind: nodes[1],
          metadata: { name, labels: { team: 'a', 'smcr.erdma.io/capable': 'stale' } },
        }),
      );
      expect(r.status, r.stderr).toBe(0);
    }
    expect((await cp.kubectl(['create', 'namespace', 'apps'])).status).toBe(0);
    const adminConfig = new KubeConfig(); // the tests' own client: client-node, independent of ours
    adminConfig.loadFromFile(cp.kubeconfig);
    admin = adminConfig.makeApiClient(CoreV1Api);
    kc = await loadKubeClient(await cp.kubeconfigFor(SA_NS, SA_NAME), {});
    const config = loadConfig({
      flags: {
        'agent.hostRoot': host,
        'agent.procRoot': proc,
        'agent.nodeName': NODE,
        'agent.nativeBinary': PLUGIN,
        'agent.refreshMs': 300,
        'agent.podGraceMs': 500,
      },
    });
    newAgent = () => {
      metrics = new AgentMetrics({ defaultMetrics: false });
      return new NodeAgent({
        config: config.agent,
        logger: pino({ level: 'silent' }),
        metrics,
        client: kc,
        discover: () => discover({ hostRoot: host }),
        clock,
      });
    };
    agent = newAgent();
    await agent.start();
  }, 120_000);

  afterAll(async () => {
    await agent?.close();
    await cp?.stop();
    cleanupNetns();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const labels = async (name = NODE): Promise<Record<string, string>> =>
    (await admin.readNode({ name })).metadata?.labels ?? {};

  it('labels its own node capable, leaves other labels and nodes alone, and keeps the labels current', async () => {
    expect(await labels()).toEqual({
      team: 'a',
      'smcr.erdma.io/capable': 'true',
      'smcr.erdma.io/driver-mode': 'default',
      'smcr.erdma.io/mechanism': 'tcp2smc',
      // tcp2smc converts every TCP socket of a pod: it keeps no SMC selection (#93).
      'smcr.erdma.io/selection': 'none',
    });
    expect(await labels('ecs-other')).toEqual({ team: 'a', 'smcr.erdma.io/capable': 'stale' });

    unlinkSync(join(proc, 'sys/net/smc/tcp2smc'));
    await until('capable=false', async () =>
      (await labels())['smcr.erdma.io/capable'] === 'false' ? true : undefined,
    );
    expect(await labels()).toEqual({
      team: 'a',
      'smcr.erdma.io/capable': 'false',
      'smcr.erdma.io/driver-mode': 'default',
      'smcr.erdma.io/reason': 'no-smc-module',
    });

    writeFileSync(join(proc, 'sys/net/smc/tcp2smc'), '0\n');
    await until('capable again', async () =>
      (await labels())['smcr.erdma.io/reason'] === undefined ? true : undefined,
    );
    expect((await labels())['smcr.erdma.io/capable']).toBe('true');
    expect((await labels())['smcr.erdma.io/mechanism']).toBe('tcp2smc');
  });

  it('cannot patch anything but nodes, nor read secrets (RBAC of the manifests)', async () => {
    const can = async (...args: string[]): Promise<string> =>
      (await cp.kubectl(['auth', 'can-i', ...args, '--as', SA])).stdout.trim();
    expect(await can('patch', `node/${NODE}`)).toBe('yes');
    expect(await can('watch', 'pods')).toBe('yes');
    expect(await can('create', 'events', '-n', 'apps')).toBe('yes');
    expect(await can('get', 'secrets', '-n', 'apps')).toBe('no');
    expect(await can('delete', 'pods', '-n', 'apps')).toBe('no');
    expect(await can('update', 'nodes/status')).toBe('no');
  });

  it('writes the PNETID file for the CNI plugin, chains the plugin, and says clearly why host pnet fails here', async () => {
    expect(readFileSync(join(host, 'run/erdma-smcr/pnetid'), 'utf8')).toBe('00163E10F8B0\n');
    const conflist = JSON.parse(
      readFileSync(join(host, 'etc/cni/net.d/10-bridge.conflist'), 'utf8'),
    );
    expect(conflist.plugins.map((p: { type: string }) => p.type)).toEqual(['bridge', 'erdma-smcr']);
    // This kernel has no SMC: the real binary's pnet add fails and the agent reports why.
    expect(agent.readiness()).toMatch(
      /pnet: erdma_0: erdma-smcr: pnet add: the SMC netlink family is missing/,
    );
  });

  /** Creates a pod, runs `sandbox` (what the runtime does: CNI), then reports it Running with an IP. */
  async function startedPod(
    name: string,
    annotations: Record<string, string>,
    nodeName = NODE,
    sandbox?: (pod: V1Pod) => void,
  ): Promise<V1Pod> {
    const pod = await admin.createNamespacedPod({
      namespace: 'apps',
      body: {
        metadata: { name, annotations },
        spec: {
          nodeName,
          automountServiceAccountToken: false,
          containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
        },
      },
    });
    sandbox?.(pod);
    // What kubelet reports once the sandbox is up.
    pod.status = { phase: 'Running', podIP: '10.22.0.9', startTime: new Date(Date.now() - 60_000) };
    return admin.replaceNamespacedPodStatus({ name, namespace: 'apps', body: pod });
  }

  const eventsOf = async (
    pod: V1Pod,
  ): Promise<{ reason?: string; message?: string; type?: string }[]> =>
    (
      await admin.listNamespacedEvent({
        namespace: 'apps',
        fieldSelector: `involvedObject.uid=${pod.metadata?.uid}`,
      })
    ).items;

  it('posts an Event when the plugin recorded that the kernel has no SMC-R, and counts it', async () => {
    const ns = createNetns('agent');
    const pod = await startedPod(
      'smcr-on-tcp',
      { 'network.alibabacloud.com/erdma-smcr': 'true' },
      NODE,
      (p) => {
        const r = runPlugin({
          plugin: PLUGIN,
          command: 'ADD',
          containerId: 'c0ffee',
          netns: ns.path,
          ifname: 'eth0',
          args: `K8S_POD_NAMESPACE=apps;K8S_POD_NAME=smcr-on-tcp;K8S_POD_UID=${p.metadata?.uid}`,
          config: {
            cniVersion: '1.0.0',
            name: 'k8s',
            type: 'erdma-smcr',
            stateDir: join(host, 'var/lib/cni/erdma-smcr'),
            pnetId: '00163E10F8B0',
            logFile: join(dir, 'cni.log'),
            runtimeConfig: { 'io.kubernetes.cri.pod-annotations': p.metadata?.annotations },
            prevResult: {
              cniVersion: '1.0.0',
              interfaces: [{ name: 'eth0', sandbox: ns.path }],
              ips: [],
            },
          },
        });
        expect(r.status, r.stderr).toBe(0);
      },
    );
    const events = await until('an event', async () =>
      (await eventsOf(pod)).length > 0 ? eventsOf(pod) : undefined,
    );
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ reason: 'SMCRUnavailable', type: 'Warning' });
    // What our plugin found on this kernel, and no advice to change the OS (#69).
    expect(events[0]?.message).toMatch(
      /the pod uses TCP: no SMC mechanism was active on its node when its network was set up \(no net\.smc\.tcp2smc, .*no IPPROTO_SMC sockets on this kernel.*\)\. Fix: see what the node can do/,
    );
    expect(events[0]?.message).not.toMatch(/Alibaba Cloud Linux 3 with kernel/);
    expect(await metrics.registry.getSingleMetricAsString('erdma_smcr_agent_pods')).toMatch(
      /outcome="tcp"} [1-9]/,
    );
  });

  it('posts that Event once across agent processes: the next agent (an update, a crash) tells only what changed', async () => {
    const pod = await admin.readNamespacedPod({ name: 'smcr-on-tcp', namespace: 'apps' });
    expect(await eventsOf(pod)).toHaveLength(1);
    await agent.close();
    agent = newAgent();
    await agent.start();
    await agent.podsPass();
    expect(await metrics.registry.getSingleMetricAsString('erdma_smcr_agent_pods')).toMatch(
      /outcome="tcp"} [1-9]/,
    );
    expect(await eventsOf(pod)).toHaveLength(1);
  });

  it('tells nothing more of a pod whose sandbox the runtime took down: finished, or being made again', async () => {
    // Reproduced first: after the DEL removed the record, a finished pod got SMCRNotApplied and
    // counted as missed, as did a pod whose sandbox was being made again.
    const stateDir = join(host, 'var/lib/cni/erdma-smcr');
    const plugin = (command: 'ADD' | 'DEL', p: V1Pod, id: string, ns: string): void => {
      const r = runPlugin({
        plugin: PLUGIN,
        command,
        containerId: id,
        netns: ns,
        ifname: 'eth0',
        args: `K8S_POD_NAMESPACE=apps;K8S_POD_NAME=${p.metadata?.name};K8S_POD_UID=${p.metadata?.uid}`,
        config: {
          cniVersion: '1.0.0',
          name: 'k8s',
          type: 'erdma-smcr',
          stateDir,
          pnetId: '00163E10F8B0',
          logFile: join(dir, 'cni.log'),
          runtimeConfig: { 'io.kubernetes.cri.pod-annotations': p.metadata?.annotations },
          prevResult: { cniVersion: '1.0.0', interfaces: [{ name: 'eth0', sandbox: ns }], ips: [] },
        },
      });
      expect(r.status, r.stderr).toBe(0);
    };
    const on = { 'network.alibabacloud.com/erdma-smcr': 'true' };
    const ns = [createNetns('job'), createNetns('resandbox')];
    const pods = [
      await startedPod('smcr-job', on, NODE, (p) => plugin('ADD', p, 'j0b', ns[0]!.path)),
      await startedPod('smcr-resandbox', on, NODE, (p) => plugin('ADD', p, 're5', ns[1]!.path)),
    ];
    for (const pod of pods)
      await until('its first event', async () =>
        (await eventsOf(pod)).length > 0 ? true : undefined,
      );
    // The runtime's DEL of each sandbox; then what the kubelet reports: the Job's pod finished,
    // the other's sandbox gone (its condition False) until the runtime has made it again.
    plugin('DEL', pods[0]!, 'j0b', ns[0]!.path);
    plugin('DEL', pods[1]!, 're5', ns[1]!.path);
    expect(readdirSync(stateDir).filter((f) => /^(j0b|re5)_/.test(f))).toEqual([]);
    const status = (p: V1Pod, s: V1Pod['status']): Promise<V1Pod> =>
      admin.replaceNamespacedPodStatus({
        name: p.metadata!.name!,
        namespace: 'apps',
        body: { ...p, status: { ...p.status, ...s } },
      });
    const now = new Date();
    const updated = [
      await status(pods[0]!, { phase: 'Succeeded' }),
      await status(pods[1]!, {
        conditions: [
          { type: 'PodReadyToStartContainers', status: 'False', lastTransitionTime: now },
        ],
      }),
    ];
    await until('the agent to see both', () =>
      updated.every((u) =>
        agent.knownPods().some((k) => k.metadata?.resourceVersion === u.metadata?.resourceVersion),
      )
        ? true
        : undefined,
    );
    skew += 5_000; // far past podGraceMs
    await agent.podsPass();
    for (const pod of pods)
      expect((await eventsOf(pod)).map((e) => e.reason)).toEqual(['SMCRUnavailable']);
    expect(await metrics.registry.getSingleMetricAsString('erdma_smcr_agent_pods')).toContain(
      'erdma_smcr_agent_pods{outcome="missed"} 0',
    );
    for (const pod of pods)
      await admin.deleteNamespacedPod({
        name: pod.metadata!.name!,
        namespace: 'apps',
        gracePeriodSeconds: 0,
      });
  });

  it('applies SMC-R late to a running pod the plugin missed, in its own netns, and says connections before stay on TCP', async () => {
    const ns = createNetns('late');
    expect(readSysctlIn(ns.name, 'net.ipv6.conf.all.disable_ipv6')).toBe('0');
    // The pod's process, as the agent sees it with hostPID: its cgroup names the pod, ns/net is the pod netns.
    // No CNI record: our plugin was not in the chain when this sandbox was set up.
    const pod = await startedPod(
      'smcr-missed',
      { 'network.alibabacloud.com/erdma-smcr': 'true' },
      NODE,
      (p) => {
        mkdirSync(join(proc, '4242/ns'), { recursive: true });
        writeFileSync(
          join(proc, '4242/cgroup'),
          `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${p.metadata?.uid?.replace(/-/g, '_')}.slice/cri-containerd-1.scope\n`,
        );
        symlinkSync(ns.path, join(proc, '4242/ns/net'));
      },
    );
    const events = await until('an event', async () =>
      (await eventsOf(pod)).length > 0 ? eventsOf(pod) : undefined,
    );
    // The plugin ran in the pod's netns: IPv6 is off there now (SMC-R carries IPv4 only).
    expect(readSysctlIn(ns.name, 'net.ipv6.conf.all.disable_ipv6')).toBe('1');
    expect(events[0]?.message).toMatch(
      /^Applied after the pod started: SMC-R was not enabled, the pod uses TCP/,
    );

    // The runtime's DEL names the real sandbox, never late-<uid>: once the pod has left the node,
    // the agent removes the record itself (and only then).
    const stateDir = join(host, 'var/lib/cni/erdma-smcr');
    const lateFile = `late-${pod.metadata?.uid}_eth0.json`;
    expect(readdirSync(stateDir)).toContain(lateFile);
    skew += 600; // the record is now older than podGraceMs
    await agent.podsPass();
    expect(readdirSync(stateDir), 'the pod still runs').toContain(lateFile);
    await admin.deleteNamespacedPod({
      name: 'smcr-missed',
      namespace: 'apps',
      gracePeriodSeconds: 0,
    });
    await until('late record removed', async () =>
      readdirSync(stateDir).includes(lateFile) ? undefined : true,
    );
  });

  it('says nothing about pods without the annotation or on other nodes', async () => {
    const plain = await startedPod('plain', {});
    const elsewhere = await startedPod(
      'elsewhere',
      { 'network.alibabacloud.com/erdma-smcr': 'true' },
      'ecs-other',
    );
    // Once the agent's watch has the annotated pod, a pass tells nothing about either.
    await until('the agent to list the pod', () =>
      agent.knownPods().some((p) => p.metadata?.uid === plain.metadata?.uid) ? true : undefined,
    );
    await agent.podsPass();
    expect(await eventsOf(plain)).toEqual([]);
    expect(await eventsOf(elsewhere)).toEqual([]);
  });

  it('agent.manageEni: a foreign ENI becomes one Node Event, unreachable metadata makes the node not capable', async () => {
    // The ENI lives in a test netns: the agent's native binary is a wrapper that runs it there.
    // The metadata service is our stand-in on loopback. These agents label a Node of their own:
    // the suite's agent relabels NODE every 300 ms, and a label read after theirs raced with it.
    const ENI_NODE = 'ecs-agent-eni';
    const created = await cp.kubectl(
      ['create', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: ENI_NODE } }),
    );
    expect(created.status, created.stderr).toBe(0);
    const devices = discover({ hostRoot: host }).filter((d) => d.mac !== '' && d.smcrCapable);
    const eni = devices[devices.length - 1]!;
    const ns = createNetns('agent-eni');
    const wrapper = join(dir, 'native-in-netns');
    writeFileSync(
      wrapper,
      `#!/bin/sh\nexec ip netns exec ${ns.name} ${join(process.cwd(), PLUGIN)} "$@"\n`,
      { mode: 0o755 },
    );
    spawnSync(
      'ip',
      [
        '-n',
        ns.name,
        'link',
        'add',
        'eni0',
        'address',
        eni.mac,
        'type',
        'veth',
        'peer',
        'name',
        'eni0p',
      ],
      { stdio: 'inherit' },
    );
    spawnSync('ip', ['-n', ns.name, 'addr', 'add', '10.9.9.9/24', 'dev', 'eni0']);
    spawnSync('ip', ['-n', ns.name, 'link', 'set', 'eni0', 'up']);
    const cfg = {
      port: 0,
      host: '127.0.0.1',
      primaryMac: '00:16:3e:99:99:99',
      enis: Object.fromEntries(
        devices.map((d) => [
          d.mac,
          { address: '192.168.3.10', cidr: '192.168.3.0/24', gateway: '192.168.3.253' },
        ]),
      ),
    };
    const server = spawn(
      process.execPath,
      ['test/harness/metadata-server.mjs', JSON.stringify(cfg)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const port = await new Promise<string>((resolve) =>
        server.stdout.once('data', (d: Buffer) => resolve(String(d).split(' ')[1]!.trim())),
      );
      const make = (metadataUrl: string): { a: NodeAgent; m: AgentMetrics } => {
        const config = loadConfig({
          flags: {
            'agent.hostRoot': host,
            'agent.procRoot': proc,
            'agent.nodeName': ENI_NODE,
            'agent.nativeBinary': wrapper,
            'agent.refreshMs': 600_000,
            'agent.manageEni': true,
            'agent.metadataUrl': metadataUrl,
            'agent.metadataRetries': 0,
            'agent.metadataTimeoutMs': 500,
            'agent.cniInstall': false,
            'agent.hostPnet': false,
            'agent.podEvents': false,
          },
        });
        const m = new AgentMetrics({ defaultMetrics: false });
        return {
          a: new NodeAgent({
            config: config.agent,
            logger: pino({ level: 'silent' }),
            metrics: m,
            client: kc,
            discover: () => devices.filter((d) => d.mac === eni.mac),
          }),
          m,
        };
      };
      const { a, m } = make(`http://127.0.0.1:${port}`);
      await a.start();
      await a.refresh(); // a second pass: still one Event
      await a.close();
      const events = (
        await admin.listNamespacedEvent({
          namespace: 'default',
          fieldSelector: `involvedObject.kind=Node,involvedObject.name=${ENI_NODE},reason=ERDMAENIAddressMismatch`,
        })
      ).items;
      expect(events).toHaveLength(1);
      expect(events[0]!.message).toMatch(
        /eni0 is up with 10\.9\.9\.9\/24, not the metadata's 192\.168\.3\.10/,
      );
      expect(await m.registry.getSingleMetricAsString('erdma_smcr_agent_enis')).toMatch(
        /status="foreign"} 1/,
      );
      // The address stayed as it was.
      expect(
        spawnSync('ip', ['-n', ns.name, '-br', 'addr', 'show', 'eni0'], { encoding: 'utf8' })
          .stdout,
      ).toMatch(/10\.9\.9\.9\/24/);

      spawnSync('ip', ['-n', ns.name, 'addr', 'flush', 'dev', 'eni0']);
      spawnSync('ip', ['-n', ns.name, 'link', 'set', 'eni0', 'down']);
      // A port nothing listens on (fetch refuses "bad ports" such as 9 outright, so take a freed one).
      const probe = createServer().listen(0, '127.0.0.1');
      await once(probe, 'listening');
      const freed = (probe.address() as AddressInfo).port;
      await new Promise((r) => probe.close(r));
      const down = make(`http://127.0.0.1:${freed}`);
      await down.a.start();
      const cap = down.a.last!;
      await down.a.close();
      expect(cap).toMatchObject({ capable: false, reason: 'eni-not-configured' });
      expect(cap.detail).toMatch(
        new RegExp(
          `instance metadata http://127\\.0\\.0\\.1:${freed}/latest/\\S+: ECONNREFUSED \\(tried once\\)`,
        ),
      );
      expect(down.a.readiness()).toMatch(/^eni: /);
      const node = await admin.readNode({ name: ENI_NODE });
      expect(node.metadata?.labels).toMatchObject({
        'smcr.erdma.io/capable': 'false',
        'smcr.erdma.io/reason': 'eni-not-configured',
      });
    } finally {
      server.kill('SIGKILL');
    }
  });

  it('agent.manageDriver: each modprobe becomes a Node Event, a mode it cannot reach a Warning and a readiness problem', async () => {
    // The module boundary is a fake modprobe on a temp tree (no erdma module can load here).
    const root = join(dir, 'driver-host');
    const proc2 = join(dir, 'driver-proc');
    mkdirSync(join(root, 'sys/module/erdma/parameters'), { recursive: true });
    writeFileSync(join(root, 'sys/module/erdma/parameters/compat_mode'), 'N\n');
    mkdirSync(join(proc2, 'sys/kernel'), { recursive: true });
    const fake = join(dir, 'fake-modprobe');
    writeFileSync(fake, `#!/bin/sh\nmkdir -p ${root}/sys/module/$1\n`, { mode: 0o755 });
    const make = (prefer: string): NodeAgent => {
      const config = loadConfig({
        flags: {
          'agent.hostRoot': root,
          'agent.procRoot': proc2,
          'agent.nodeName': NODE,
          'agent.nativeBinary': PLUGIN,
          'agent.refreshMs': 600_000,
          'agent.manageDriver': true,
          'agent.preferDriver': prefer,
          'agent.modprobe': [fake],
          'agent.cniInstall': false,
          'agent.hostPnet': false,
          'agent.podEvents': false,
          'agent.nodeLabels': false,
        },
      });
      return new NodeAgent({
        config: config.agent,
        logger: pino({ level: 'silent' }),
        metrics: new AgentMetrics({ defaultMetrics: false }),
        client: kc,
        discover: () => [],
      });
    };
    const events = async (reason: string) =>
      (
        await admin.listNamespacedEvent({
          namespace: 'default',
          fieldSelector: `involvedObject.kind=Node,involvedObject.name=${NODE},reason=${reason}`,
        })
      ).items;
    const a = make('default');
    await a.start();
    await a.close();
    expect((await events('ERDMADriverAction')).map((e) => [e.type, e.message])).toEqual([
      ['Normal', 'modprobe smc: SMC-R needs the smc module'],
    ]);
    const b = make('ofed');
    await b.start();
    await b.refresh(); // told once
    await b.close();
    const mismatch = await events('ERDMADriverModeMismatch');
    expect(mismatch).toHaveLength(1);
    expect(mismatch[0]!.message).toMatch(/runs in default mode, ofed was asked for/);
    expect(b.readiness()).toMatch(/^driver: /);
  });

  it("samples what SMC-R pods' connections run on: metrics per pod, one SMCRFallback Event with the decoded reason", async () => {
    // This kernel has no SMC, so the native binary is a stand-in that answers `smc summary`
    // (`--select SEL --netns PATH` pairs: a line per --netns) with
    // what the real one printed in the SMC-R VM for a pod whose connection fell back
    // (test/fixtures/smc/summary-c.json); the real binary's output is checked in the VM test.
    const summary = readFileSync('test/fixtures/smc/summary-c.json', 'utf8').replace(/\s+/g, '');
    const stand = join(dir, 'native-smc');
    writeFileSync(
      stand,
      `#!/bin/sh\n[ "$1 $2" = "smc summary" ] || exit 2\nshift 2\nwhile [ $# -gt 1 ]; do [ "$1" = --netns ] && echo "{\\"netns\\":\\"$2\\",\\"summary\\":${summary.replace(/"/g, '\\"')}}"; shift 2; done\n`,
      { mode: 0o755 },
    );
    const config = loadConfig({
      flags: {
        'agent.hostRoot': host,
        'agent.procRoot': proc,
        'agent.nodeName': NODE,
        'agent.nativeBinary': stand,
        'agent.refreshMs': 600_000,
        'agent.smcSampleMs': 0,
        'agent.cniInstall': false,
        'agent.hostPnet': false,
        'agent.nodeLabels': false,
        'agent.lateApply': false,
      },
    });
    const m = new AgentMetrics({ defaultMetrics: false });
    const a = new NodeAgent({
      config: config.agent,
      logger: pino({ level: 'silent' }),
      metrics: m,
      client: kc,
      discover: () => [],
    });
    await a.start();
    try {
      const pods = await a.sampleSmc();
      expect(pods.map((p) => `${p.namespace}/${p.name}`)).toContain('apps/smcr-on-tcp');
      await a.sampleSmc(); // within the hour: no second Event
      const pod = await admin.readNamespacedPod({ name: 'smcr-on-tcp', namespace: 'apps' });
      const fallbacks = (await eventsOf(pod)).filter((e) => e.reason === 'SMCRFallback');
      expect(fallbacks).toHaveLength(1);
      expect(fallbacks[0]).toMatchObject({
        type: 'Warning',
        message: expect.stringMatching(
          /^1 of 1 connection\(s\) fell back to TCP\. NOSMCDEV \(0x03030000, 1 connection\(s\)\): no SMC device matches/,
        ),
      });
      const text = await m.registry.metrics();
      expect(text).toMatch(
        /erdma_smcr_pod_connections\{namespace="apps",pod="smcr-on-tcp",mode="TCP"\} 1/,
      );
      expect(text).toMatch(
        /erdma_smcr_pod_fallback_connections\{namespace="apps",pod="smcr-on-tcp",reason="NOSMCDEV"\} 1/,
      );
    } finally {
      await a.close();
    }
  });
});
