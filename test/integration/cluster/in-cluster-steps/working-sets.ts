// Each of our containers' working set, as the kubelet reads it, within its memory request; and the
// oom_score_adj the kubelet gives our system-node-critical daemons.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { quantityToScalar } from '@kubernetes/client-node/dist/util.js';
import { readMemoryCgroup } from '../../../../bench/cgroup.js';
import { criOomScoreAdj, NODE, type InCluster } from './context.js';

// Not re-exported from the package's index; the same parser the client uses for quantities.

export async function workingSetsWithinRequests(c: InCluster): Promise<void> {
  const { node, kubectl, getJson, until, rolledOut } = c;
  await rolledOut('daemonset', 'erdma-smcr-agent');
  await rolledOut('daemonset', 'erdma-smcr-device-plugin');
  await rolledOut('deployment', 'erdma-smcr-webhook');
  const requested = new Map<string, bigint>();
  const containerIds = new Map<string, string>();
  // Pods of an earlier rollout still terminating have no stats to wait for.
  for (const p of (await getJson('pods', '-n', 'erdma-smcr')).items.filter(
    (p) => !p.metadata.deletionTimestamp && p.status.phase === 'Running',
  )) {
    for (const c of (p.status.containerStatuses ?? []) as {
      name: string;
      containerID?: string;
    }[])
      containerIds.set(
        `${p.metadata.name}/${c.name}`,
        c.containerID?.replace(/^containerd:\/\//, '') ?? '',
      );
    for (const c of p.spec.containers as {
      name: string;
      resources: { requests?: { memory?: string } };
    }[])
      requested.set(
        `${p.metadata.name}/${c.name}`,
        BigInt(quantityToScalar(c.resources.requests?.memory ?? '0')),
      );
  }
  type Summary = {
    pods: {
      podRef: { name: string; namespace: string };
      containers?: {
        name: string;
        memory?: { workingSetBytes?: number };
      }[];
    }[];
  };
  // The kubelet's stats for a container start after its first housekeeping pass.
  const read = await until(
    'the kubelet summarising every container of ours',
    async () => {
      const s = JSON.parse(
        await kubectl('get', '--raw', `/api/v1/nodes/${NODE}/proxy/stats/summary`),
      ) as Summary;
      const ours = new Map<string, number>();
      for (const p of s.pods.filter((p) => p.podRef.namespace === 'erdma-smcr'))
        for (const c of p.containers ?? [])
          if (c.memory?.workingSetBytes)
            ours.set(`${p.podRef.name}/${c.name}`, c.memory.workingSetBytes);
      return [...requested.keys()].every((k) => ours.has(k)) ? ours : undefined;
    },
    240_000,
  );
  const mb = (n?: number | bigint): string =>
    n === undefined ? '-' : (Number(n) / 1e6).toFixed(2);
  // This kubelet's Summary has the working set only (the CRI stats provider); what the
  // container's cgroup is charged, and whether `node`'s file pages are among it, is read from
  // the cgroup the kubelet made (cgroupfs driver: <cgroupRoot>/kubepods/<qos>/pod<uid>/<id>).
  const kubepods = join(node.cgroupRoot, 'kubepods');
  const cgroups = cgroupDirs(kubepods);
  const table = [...requested].map(([k, req]) => {
    const id = containerIds.get(k) ?? '';
    const cg = cgroups.find((d) => id !== '' && d.endsWith(`/${id}`));
    const c = cg === undefined ? undefined : readMemoryCgroup(cg);
    const charge =
      c === undefined
        ? 'cgroup not found'
        : `cgroup usage ${mb(c.usage)}: anon ${mb(c.anon)}, files ${mb(c.file)} (inactive ${mb(c.inactiveFile)}, mapped ${mb(c.mappedFile)})`;
    return `${k}: working set ${mb(read.get(k))} MB; ${charge}; request ${mb(req)} MB`;
  });
  console.info(`our containers as the kubelet reads them:\n  ${table.join('\n  ')}`);
  for (const [k, req] of requested) {
    expect(req, `${k} has a memory request`).toBeGreaterThan(0n);
    expect(BigInt(read.get(k)!), table.join('\n')).toBeLessThanOrEqual(req);
  }
  // The daemons' requests are sized on the working set alone because the request does not
  // protect them: as system-node-critical pods the kubelet asks for a Guaranteed pod's OOM
  // score for their containers, whatever they request (docs/benchmarks.md, "The requests").
  // Read from the container config the kubelet sent over CRI, as containerd keeps it: this
  // machine lets no process lower its oom_score_adj, so containerd here raises any lower
  // score to its own (restrict_oom_score_adj, ../../harness/containerd.ts).
  const daemons = [...containerIds].filter(([k]) => /\/(agent|device-plugin)$/.test(k));
  expect(daemons).toHaveLength(2);
  for (const [k, id] of daemons)
    expect(criOomScoreAdj(node.containerd.ctr(['containers', 'info', id])), k).toBe(-997);
}

/**
 * Every directory below the kubelet's kubepods cgroup. A pod of the suite's earlier streams that
 * ends while the tree is walked takes its directories with it (ENOENT mid-walk): walked again.
 */
function cgroupDirs(kubepods: string): string[] {
  for (let attempt = 1; ; attempt++) {
    try {
      return (
        readdirSync(join('/sys/fs/cgroup/memory', kubepods), { recursive: true }) as string[]
      ).map((d) => join(kubepods, d));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 5) throw err;
    }
  }
}
