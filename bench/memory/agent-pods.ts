// The agent on a node with many pods (`npm run bench node-pods`): what it holds per pod of its node,
// and what an agent restart costs a node of SMC-R pods.
import { type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodePods, heldPerPod } from '../node-pods.js';
import { skippedRow, type BenchRow } from '../report.js';
import { loadKubeClient } from '../../src/cluster/kubeconfig.js';
import type { KubeClient } from '../../src/cluster/client.js';
import { stop } from '../webhook.js';
import { startControlPlane } from '../../test/harness/k8s/control-plane.js';
import {
  BUSY_NODE_PODS,
  MB,
  Runtime,
  apiFor,
  busyHost,
  idle,
  idleRow,
  noKubernetesBinaries,
  officialRuntimes,
  probePorts,
  probedAsKubelet,
  sleep,
  spawnBare,
  startAgent,
  status,
} from './instruments.js';

/**
 * Pods on the agent's node in the `pods` bench: none; a busy node's, the kubelet's default
 * maxPods; and a node that runs Jobs, whose finished pods stay (and are watched) until the
 * cluster's pod GC threshold, 12,500 by default, is reached.
 */
const NODE_POD_COUNTS = [0, BUSY_NODE_PODS, 1000] as const;

/**
 * Each agent start of the `pods` bench is read twice: once the kubelet's probes are answered (3 s,
 * as every idle row), and once V8's memory reducer has given back what listing the pods took: at
 * 3 s the agent with 1,000 pods still holds the list's garbage, which it had given back between
 * 20 and 40 s after start in each start read.
 */
const POD_SETTLED_MS = 40_000;

const POD_STARTS = 2;

async function agentWithPods(
  start: () => Promise<ChildProcess>,
): Promise<{ idle: number[]; settled: number[] }> {
  const read = { idle: [] as number[], settled: [] as number[] };
  for (let i = 0; i < POD_STARTS; i++) {
    const t0 = Date.now();
    const p = await start();
    try {
      read.idle.push(await idle(p));
      await sleep(POD_SETTLED_MS - (Date.now() - t0));
      read.settled.push(status(p, 'VmRSS'));
    } finally {
      await stop(p);
    }
  }
  return read;
}

/** The SMC-R pods on the node for the restart rows. */
const RESTART_SMCR_PODS = 250;

/**
 * The agent started with SMC-R pods on its node, then started again as an update or a crash
 * starts it: how long until its readiness probe passes, and how many Events it posted. The pods
 * have no record of our plugin (none ran), so each is told SMCRNotApplied; a later start need not
 * tell it again, and the third start shows one without what the first kept on the host (every
 * start before stop 68).
 */
async function agentRestartRows(
  runtimes: readonly Runtime[],
  host: string,
  client: KubeClient,
  nodeName: string,
  kubeconfig: string,
): Promise<BenchRow[]> {
  const namespace = 'smcr-pods';
  await client.request('POST', '/api/v1/namespaces', {
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
  });
  await createNodePods(client, nodeName, 0, RESTART_SMCR_PODS, { namespace, smcr: true });
  const events = async (): Promise<number> =>
    (await client.request<{ items: unknown[] }>('GET', `/api/v1/namespaces/${namespace}/events`))
      .items.length;
  const told = join(host, 'run/erdma-smcr/pod-events.json');
  const rows: BenchRow[] = [];
  for (const rt of runtimes) {
    rmSync(told, { force: true });
    let first = 0;
    for (const start of ['first start', 'restart', 'restart without what was told']) {
      if (start === 'restart without what was told') rmSync(told, { force: true });
      process.stderr.write(
        `bench pods: the agent's ${start}, ${RESTART_SMCR_PODS} SMC-R pods${rt.on}\n`,
      );
      const before = await events();
      const t0 = Date.now();
      const p = await startAgent(
        { node: rt.node, host },
        { ERDMA_SMCR_NODE_NAME: nodeName },
        kubeconfig,
      );
      try {
        await probedAsKubelet(p, probePorts.get(p)!, 60_000);
        const ms = Date.now() - t0;
        first ||= ms;
        rows.push({
          bench: 'pods',
          case: `agent's ${start} with ${RESTART_SMCR_PODS} SMC-R pods on its node${rt.on}: until Ready`,
          value: ms,
          unit: 'ms',
          ratio: ms / first,
          target: `${(await events()) - before} Events posted; ratio to the first start`,
        });
      } finally {
        await stop(p);
      }
    }
  }
  return rows;
}

/**
 * `npm run bench pods`: the agent as shipped with the harness's real API server, idle and 40 s
 * after start, with 0, 110 and 1,000 running pods on its node (bench/node-pods.ts: a
 * ReplicaSet's pods with two containers, their status as a kubelet writes it), the ratio to the
 * agent with none; the agent's start, restart and restart without what it kept on the host,
 * with 250 SMC-R pods on its node (agentRestartRows); and the V8 heap each pod takes, held whole
 * and as the agent keeps it (keptPod), the ratio kept to whole.
 */
export async function benchNodePods(): Promise<BenchRow[]> {
  const missing = noKubernetesBinaries();
  if (missing) return [skippedRow('pods', 'the agent with pods on its node', missing)];
  const dir = mkdtempSync(join(tmpdir(), 'bench-pods-'));
  const rows: BenchRow[] = [];
  const runtimes: Runtime[] = [];
  const cp = await startControlPlane();
  try {
    runtimes.push({ node: process.execPath, on: '', bare: spawnBare(process.execPath), base: 0 });
    officialRuntimes(runtimes, rows);
    for (const rt of runtimes) rt.base = await idle(rt.bare);
    const api = await apiFor(cp, dir);
    const host = busyHost(dir);
    const client = await loadKubeClient(cp.kubeconfig, {});
    // Each reading's baseline: the agent with no pods on the same runtime, read at the same time.
    const none = new Map<string, number>();
    let made = 0;
    for (const n of NODE_POD_COUNTS) {
      await createNodePods(client, api.nodeName, made, n);
      made = n;
      for (const rt of runtimes) {
        process.stderr.write(`bench pods: the agent, ${n} pods on its node${rt.on}\n`);
        const read = await agentWithPods(() =>
          startAgent(
            { node: rt.node, host },
            { ERDMA_SMCR_NODE_NAME: api.nodeName },
            cp.kubeconfig,
          ),
        );
        for (const [when, readings] of [
          ['idle', read.idle],
          [`${POD_SETTLED_MS / 1000} s after start`, read.settled],
        ] as const) {
          const r = idleRow(
            `agent as shipped with the API server, ${n} running pods on its node${rt.on}, ${when}`,
            readings,
            none.get(`${rt.on}${when}`) ?? rt.base,
          );
          if (n === 0) none.set(`${rt.on}${when}`, r.value * MB);
          rows.push({
            ...r,
            bench: 'pods',
            target: `${r.target ?? ''}; ratio to ${n === 0 ? 'bare `node`' : 'the agent with no pods'}`,
          });
        }
      }
    }
    const list = join(dir, 'pods.json');
    writeFileSync(
      list,
      JSON.stringify(
        await client.request('GET', '/api/v1/pods', {
          query: { fieldSelector: `spec.nodeName=${api.nodeName}` },
        }),
      ),
    );
    rows.push(...(await agentRestartRows(runtimes, host, client, api.nodeName, cp.kubeconfig)));
    for (const rt of runtimes) {
      const h = heldPerPod(rt.node, list);
      rows.push({
        bench: 'pods',
        case: `V8 heap per pod held by the agent's pods' watch, ${h.pods} pods${rt.on}: whole ${(h.whole / 1024).toFixed(1)} KB`,
        value: h.kept / 1024,
        unit: 'KB per pod',
        ratio: h.kept / h.whole,
        target: `as the agent keeps it (keptPod); ratio to the pod held whole; ${(((h.whole - h.kept) * 1000) / MB).toFixed(1)} MB less per 1,000 pods`,
      });
    }
    return rows;
  } finally {
    await cp.stop();
    for (const rt of runtimes) rt.bare.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
