// `erdma-smcr devices`: the eRDMA devices of this node, like a short ibv_devinfo; with --watch,
// their traffic per second like `eadm stat -l`.
import { Option } from 'commander';
import { existsSync } from 'node:fs';
import { AppError } from '../../errors.js';
import type { CommandContext } from '../config.js';
import type { CliIO } from '../../util/io.js';

export function devicesCommand({ program, io, configFor, setCode }: CommandContext): void {
  program
    .command('devices')
    .description('list the eRDMA devices of this node (from sysfs)')
    .option('--host-root <dir>', 'root of the host filesystem (default: /)', undefined)
    .addOption(
      new Option('-o, --output <format>', 'output format (as status and check)')
        .choices(['text', 'json'])
        .default('text'),
    )
    .addOption(new Option('--json', 'the same as -o json').hideHelp())
    .option(
      '--watch',
      'traffic per device and port like `eadm stat -l`: rates each interval, max/avg/min, totals (Ctrl-C ends)',
    )
    .option('--interval <ms>', 'with --watch: sampling interval', '1000')
    .option('--count <n>', 'with --watch: stop after this many samples')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  erdma-smcr devices                       the eRDMA devices, like a short ibv_devinfo',
        '  erdma-smcr devices --watch --count 10    traffic per second, like eadm stat -l',
        '  erdma-smcr devices -o json',
        '',
      ].join('\n'),
    )
    .action(
      async (opts: {
        hostRoot?: string;
        output: 'text' | 'json';
        json?: boolean;
        watch?: boolean;
        interval: string;
        count?: string;
      }) => {
        const json = opts.json === true || opts.output === 'json';
        if (!opts.watch && (opts.count !== undefined || opts.interval !== '1000'))
          throw new AppError('USAGE', '--count and --interval go with --watch');
        const config = await configFor({ 'agent.hostRoot': opts.hostRoot });
        requireHostRoot(config.agent.hostRoot);
        const { discover, discoveryOptions, formatDevices } =
          await import('../../devices/discovery.js');
        const devices = discover(discoveryOptions(config.agent));
        if (!opts.watch) {
          io.out(json ? `${JSON.stringify(devices, null, 2)}\n` : formatDevices(devices));
          return setCode(0);
        }
        const interval = Number(opts.interval);
        const count = opts.count === undefined ? Infinity : Number(opts.count);
        if (!Number.isInteger(interval) || interval < 100)
          throw new AppError(
            'USAGE',
            `--interval must be at least 100 (ms), got "${opts.interval}"`,
          );
        if (!(count >= 1))
          throw new AppError('USAGE', `--count must be a positive number, got "${opts.count}"`);
        if (devices.length === 0)
          throw new AppError('USAGE', 'no eRDMA devices to watch on this node');
        await watchDevices(
          io,
          devices.map((d) => d.name),
          config.agent.hostRoot,
          interval,
          count,
          json,
        );
        setCode(0);
      },
    );
}

/** A host root that does not exist is a mistyped flag, not a node without devices or pods. */
export function requireHostRoot(hostRoot: string): void {
  if (!existsSync(hostRoot))
    throw new AppError(
      'USAGE',
      `--host-root ${hostRoot} does not exist (the agent's ERDMA_SMCR_HOST_ROOT or agent.hostRoot)`,
    );
}

/**
 * Samples the devices' counters every interval: on a terminal the view is redrawn in place, on a
 * pipe each sample is appended (JSON lines with --json). Ends after `count` samples or on SIGINT.
 */
async function watchDevices(
  io: CliIO,
  names: readonly string[],
  hostRoot: string,
  interval: number,
  count: number,
  json: boolean,
): Promise<void> {
  const { RateWatch, formatRates, readDeviceCounters } =
    await import('../../agent/observe/counters.js');
  const watch = new RateWatch();
  let stop = false;
  const onInt = (): void => {
    stop = true;
  };
  process.once('SIGINT', onInt);
  try {
    for (let n = 0; n < count && !stop; n++) {
      if (n > 0) await new Promise((r) => setTimeout(r, interval));
      const rows = watch.sample(
        names.flatMap((d) => readDeviceCounters(hostRoot, d)),
        Date.now(),
      );
      if (json) io.out(`${JSON.stringify({ time: new Date().toISOString(), ports: rows })}\n`);
      else if (io.stdoutIsTTY)
        io.out(`\x1b[H\x1b[2J${new Date().toISOString()}\n${formatRates(rows)}`);
      else io.out(`${new Date().toISOString()}\n${formatRates(rows)}`);
    }
  } finally {
    process.removeListener('SIGINT', onInt);
  }
}
