// Preloaded with --import by the check benchmark: prints the process's peak RSS (KiB) on exit.
import { writeSync } from 'node:fs';

process.on('exit', () => writeSync(2, `\nmaxrss_kib=${process.resourceUsage().maxRSS}\n`));
