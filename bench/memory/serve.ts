// `serve`'s rows of the memory bench: idle, under a load of SMC-R reviews, and again after it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Layout } from '../env.js';
import { type BenchRow } from '../report.js';
import { deploymentNodeFlags, deploymentNodeOptions } from '../scale.js';
import { load, review, startChild, stop, type Server } from '../webhook.js';
import { freePort } from '../../test/harness/k8s/control-plane.js';
import { TARGET, idle, probePorts, row, sleep, status } from './instruments.js';

/** How long after its load `serve`'s resident set is read again. */
const AFTER_LOAD_MS = 20_000;

export async function serveRows(
  dir: string,
  base: number,
  extraArgs: string[],
  label: string,
  underLoad: boolean,
  layout: Layout,
  node = process.execPath,
): Promise<BenchRow[]> {
  const probePort = await freePort();
  const server: Server = await startChild(
    [
      ...layout.prefix,
      ...(layout.file ? [node] : []),
      ...deploymentNodeFlags(),
      layout.entry,
      'serve',
      '--port',
      '0',
      '--cert-dir',
      layout.certDir,
      '--log-level',
      'warn',
      '--metrics-port',
      String(probePort),
      ...extraArgs,
    ],
    /listening on https:\/\/127\.0\.0\.1:(\d+)/,
    // As its Deployment runs it.
    { NODE_OPTIONS: deploymentNodeOptions() },
    layout.file || node,
  );
  // The kubelet probes its pod as it does the daemons' (its Deployment's probes on the metrics port).
  probePorts.set(server.child, probePort);
  try {
    const rows = [
      row(`serve (${label}), idle`, await idle(server.child), base, TARGET.serveIdle, layout.note),
    ];
    if (underLoad) {
      const ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
      const r = await load(server, '/mutate', review(true), ca, 5);
      rows.push(
        row(
          `serve (${label}), peak under load`,
          status(server.child, 'VmHWM'),
          base,
          TARGET.servePeak,
          `${Math.round(r.rps)} req/s of SMC-R reviews for 5 s`,
        ),
      );
      // What it keeps of the burst: on Node 22 and later, Maglev's compilations left about 20 MB
      // more here than without it (docs/benchmarks.md, "Maglev and the webhook").
      await sleep(AFTER_LOAD_MS);
      rows.push(
        row(
          `serve (${label}), ${AFTER_LOAD_MS / 1000} s after its load`,
          status(server.child, 'VmRSS'),
          base,
          undefined,
          'what a webhook that has served a burst holds; the targets are read above',
        ),
      );
    }
    return rows;
  } finally {
    await stop(server.child);
  }
}
