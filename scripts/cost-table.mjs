#!/usr/bin/env node
// The one table of what SMC costs and gains, per mechanism and kernel (#100), made from the bench
// output kept in docs/benchmarks.md (`npm run bench smc-cost apps` prints it) and written into each
// document that quotes it, between `<!-- cost-table -->` and `<!-- /cost-table -->`. Run after a
// bench run updates docs/benchmarks.md; test/unit/cost-table.test.ts fails while a copy differs.
//   node scripts/cost-table.mjs          write the copies
//   node scripts/cost-table.mjs --check  exit 1 naming the copies that differ
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const QUOTED_IN = ['docs/performance-guide.md', 'docs/policy.md', 'docs/support-matrix.md'];
const BEGIN = '<!-- cost-table -->';
const END = '<!-- /cost-table -->';

/** The kernels and mechanisms the bench ran, as its rows name them, and as the table heads them. */
const COLUMNS = [
  ['bookworm, preload', '6.1, preload'],
  ['trixie, preload', '6.12, preload'],
  ['trixie, bpf', '6.12, bpf (no selection)'],
  ['newest, preload', '7.3, preload'],
  ['newest, bpf', '7.3, bpf + smc_hs_ctrl'],
];

/** The situations, each the bench's case text after the column's prefix. */
const ROWS = [
  ['a connect to an SMC-R pod', 'SMC-R client → SMC-R pod, connect, p50'],
  [
    'a connect to an SMC peer that shares no RDMA device (declined)',
    'SMC-R client → SMC pod with no shared RDMA device (declined), connect, p50',
  ],
  ['a connect to a pod without SMC', 'SMC-R client → pod without SMC, connect, p50'],
  [
    'a connect to an excluded port (the selection)',
    'selection on: → SMC-R pod on an excluded port, connect, p50',
  ],
  [
    "a connect outside the selection's networks",
    "selection on: → a peer outside the selection's networks, connect, p50",
  ],
  [
    'a 100-byte exchange on a new connection to an SMC-R pod',
    'SMC-R client → SMC-R pod, 100-byte exchange on a new connection, p50',
  ],
  [
    '16 MiB on one connection to an SMC-R pod (throughput)',
    'SMC-R client → SMC-R pod, 16 MiB on one connection',
  ],
];

/** The bench's rows: case text → ratio, for one bench. */
function ratios(text, bench) {
  const out = new Map();
  for (const line of text.split('\n')) {
    const cells = line.split(' | ');
    if (cells[0] !== `| ${bench}` || cells.length < 6) continue;
    const ratio = /^([\d.]+)×$/.exec(cells[4].trim())?.[1];
    if (ratio) out.set(cells[1].trim(), ratio);
  }
  return out;
}

function find(map, prefix, start) {
  for (const [k, v] of map) if (k.startsWith(`${prefix}: ${start}`)) return v;
  return undefined;
}

export function costTable(benchmarks) {
  const cost = ratios(benchmarks, 'smc-cost');
  const apps = ratios(benchmarks, 'apps');
  const head = `| × plain TCP's time (throughput: × its rate) | ${COLUMNS.map((c) => c[1]).join(' | ')} |`;
  const rule = `|---|${COLUMNS.map(() => '---').join('|')}|`;
  const rows = ROWS.map(
    ([label, start]) =>
      `| ${label} | ${COLUMNS.map(([prefix]) => {
        const r = find(cost, prefix, start);
        return r === undefined ? 'not run' : `${r}×`;
      }).join(' | ')} |`,
  );
  const app = (start) => {
    const r = find(apps, 'bookworm', start) ?? find(apps, 'newest', start);
    return r === undefined ? 'not run' : `${r}×`;
  };
  const appRows = [
    `| nginx as a proxy, an upstream connect per request, the upstream's port excluded (× without the library) | ${app('nginx proxy, an upstream connect per request, under the library, the upstream')} | | | | |`,
    `| the same, the upstream selected (SMC-R per request) | ${app('nginx proxy, an upstream connect per request, under the library, selected')} | | | | |`,
    `| redis SET / GET, nginx under wrk, kept connections: SMC-R over Soft-RoCE (6.1); SMC-D over loopback-ism (7.3) | ${['redis-benchmark SET', 'redis-benchmark GET', 'wrk → nginx'].map((s) => find(apps, 'bookworm', s) ?? '?').join(' / ')}× | | | | ${['redis-benchmark SET', 'redis-benchmark GET', 'wrk → nginx'].map((s) => find(apps, 'newest', s) ?? '?').join(' / ')}× |`,
  ];
  return [
    BEGIN,
    '<!-- made by scripts/cost-table.mjs from docs/benchmarks.md: edit neither by hand -->',
    head,
    rule,
    ...rows,
    ...appRows,
    '',
    "In TCG VMs over Soft-RoCE (emulated RDMA): the ratios say what SMC's handshake and fallbacks cost against TCP on the same machine, not what eRDMA gains. `tcp2smc` (Alibaba Cloud Linux 3) is not run here: its connects pay as `bpf`'s do (the same kernel socket), and by default such nodes run pods under the preload library.",
    END,
  ].join('\n');
}

/** The document with its copy replaced; the text unchanged when it has no markers. */
export function withTable(doc, table) {
  const b = doc.indexOf(BEGIN);
  const e = doc.indexOf(END);
  if (b < 0 || e < b) return doc;
  return doc.slice(0, b) + table + doc.slice(e + END.length);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const table = costTable(readFileSync('docs/benchmarks.md', 'utf8'));
  const differ = [];
  for (const f of QUOTED_IN) {
    const doc = readFileSync(f, 'utf8');
    if (!doc.includes(BEGIN)) {
      differ.push(`${f} (no ${BEGIN} marker)`);
      continue;
    }
    const next = withTable(doc, table);
    if (next === doc) continue;
    if (process.argv.includes('--check')) differ.push(f);
    else writeFileSync(f, next);
  }
  if (differ.length > 0) {
    console.error(`cost table out of date in: ${differ.join(', ')} (node scripts/cost-table.mjs)`);
    process.exit(1);
  }
}
