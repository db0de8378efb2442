// `npm run bench`: runs every benchmark (or those named as arguments) and prints one Markdown table.
import { cpus } from 'node:os';
import { benchCheck } from './check.js';
import { benchCni } from './cni.js';
import { benchMemory } from './memory.js';
import { benchScale } from './scale.js';
import { benchSmc } from './smc.js';
import { table, type BenchRow } from './report.js';
import { benchWebhook } from './webhook.js';

const BENCHES: Record<string, () => Promise<BenchRow[]>> = {
  check: benchCheck,
  webhook: benchWebhook,
  cni: benchCni,
  smc: benchSmc,
  memory: benchMemory,
  scale: benchScale,
};

const wanted = process.argv.slice(2);
const rows: BenchRow[] = [];
for (const [name, run] of Object.entries(BENCHES)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  process.stderr.write(`bench ${name}...\n`);
  rows.push(...(await run()));
}
console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}\n`);
console.log(table(rows));
