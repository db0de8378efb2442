// Chains our CNI plugin after the node's primary CNI, the way istio-cni and Cilium's chained mode
// do: the binary is copied into the CNI bin dir atomically, and our entry is appended to the
// `plugins` of the active conflist (the first file in the conf dir, in the order libcni and the
// runtimes sort them). A `.conf` is converted to a `.conflist`. A file that does not parse is
// never written: it is reported and retried. Watching the directory re-inserts our entry when
// the primary CNI rewrites its file.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  watch,
  writeFileSync,
  type FSWatcher,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { CNI_PLUGIN_TYPE } from '../../constants.js';
import type { Duty, Problem } from '../duty.js';
import { copyAtomic, sha256File, writeAtomic } from '../../util/fs.js';

export const PLUGIN_TYPE = CNI_PLUGIN_TYPE;
export const BINARY_NAME = 'erdma-smcr';
/** In the plugin's state dir: written by `agent --uninstall`, removed by a starting agent. */
export const UNINSTALL_MARKER = '.uninstalled';
const CONF_EXT = /\.(conflist|conf|json)$/;

export interface PluginEntryOptions {
  readonly pnetIdFile: string;
  readonly stateDir: string;
  readonly logFile: string;
}

export function pluginEntry(o: PluginEntryOptions): Record<string, unknown> {
  return {
    type: PLUGIN_TYPE,
    capabilities: { 'io.kubernetes.cri.pod-annotations': true },
    pnetIdFile: o.pnetIdFile,
    stateDir: o.stateDir,
    logFile: o.logFile,
  };
}

/** The file a runtime would load: the first config file by name (libcni's ConfFiles order). */
export function activeConfFile(confDir: string): string | undefined {
  if (!existsSync(confDir)) return undefined;
  return readdirSync(confDir)
    .filter((f) => CONF_EXT.test(f) && !f.startsWith('.'))
    .sort()
    .find((f) => statSync(join(confDir, f)).isFile());
}

export type EditResult =
  | { readonly ok: true; readonly text: string; readonly changed: boolean; readonly file: string }
  | { readonly ok: false; readonly error: string };

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseConf(file: string, text: string): Json | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return `${file} is not valid JSON (${(err as Error).message}); left untouched`;
  }
  if (!isObj(doc)) return `${file} is not a JSON object; left untouched`;
  if (file.endsWith('.conflist')) {
    if (!Array.isArray(doc.plugins) || !doc.plugins.every(isObj))
      return `${file} has no "plugins" list of objects; left untouched`;
  } else if (typeof doc.type !== 'string') {
    return `${file} has no plugin "type"; left untouched`;
  }
  return doc;
}

/** Converts a single-plugin `.conf` document into a conflist document. */
function toConflist(doc: Json): Json {
  const { cniVersion, name, ...plugin } = doc;
  return {
    ...(cniVersion !== undefined ? { cniVersion } : {}),
    ...(name !== undefined ? { name } : {}),
    plugins: [plugin],
  };
}

const serialize = (doc: Json): string => `${JSON.stringify(doc, null, 2)}\n`;

/** Our entry last in `plugins`, exactly once; returns the new file name and text. */
export function insertPlugin(file: string, text: string, entry: Json): EditResult {
  const doc = parseConf(file, text);
  if (typeof doc === 'string') return { ok: false, error: doc };
  const list = file.endsWith('.conflist') ? doc : toConflist(doc);
  const others = (list.plugins as Json[]).filter((p) => p.type !== PLUGIN_TYPE);
  const next = { ...list, plugins: [...others, entry] };
  const outFile = file.replace(CONF_EXT, '.conflist');
  const changed = outFile !== file || JSON.stringify(next) !== JSON.stringify(doc);
  return { ok: true, text: changed ? serialize(next) : text, changed, file: outFile };
}

/** The file without our entry (unchanged text when it holds none). */
export function removePlugin(file: string, text: string): EditResult {
  const doc = parseConf(file, text);
  if (typeof doc === 'string') return { ok: false, error: doc };
  if (!file.endsWith('.conflist')) return { ok: true, text, changed: false, file };
  const plugins = (doc.plugins as Json[]).filter((p) => p.type !== PLUGIN_TYPE);
  const changed = plugins.length !== (doc.plugins as Json[]).length;
  return { ok: true, text: changed ? serialize({ ...doc, plugins }) : text, changed, file };
}

export interface InstallerOptions extends PluginEntryOptions {
  /** Host CNI config dir (as the agent sees it, e.g. /host/etc/cni/net.d). */
  readonly confDir: string;
  /** Host CNI bin dir (e.g. /host/opt/cni/bin). */
  readonly binDir: string;
  /** Our plugin binary inside the image. */
  readonly binarySource: string;
  /**
   * The preload library inside the image and the host directory it goes to (the webhook mounts it
   * into pods on AF_SMC-only nodes). Skipped when the image has none.
   */
  readonly preload?: { readonly source: string; readonly dir: string };
  readonly logger: Logger;
  /** Told the current problem (undefined when the chain is in place). */
  readonly onStatus?: (problem: Problem) => void;
  /** Asks for a pass soon: the conf dir changed (the primary CNI rewrote its file). */
  readonly wake?: () => void;
  /**
   * A host file that `uninstall` writes first: an agent still running on the node (the README's
   * uninstall execs into it before the DaemonSet is deleted) then stops putting our entry back.
   * A starting agent removes it: starting means installing.
   */
  readonly uninstallMarker?: string;
}

/**
 * The CNI duty: our binary in the CNI bin dir and our entry in the active configuration. Its pass
 * puts the entry back whenever it is missing; the conf dir is watched so that happens soon after
 * the primary CNI rewrites its file (`wake`), and the orchestrator runs it again while there is a
 * problem.
 */
export class CniInstaller implements Duty {
  readonly name = 'cni';
  private watcher: FSWatcher | undefined;
  private current: Problem = 'not installed yet';

  constructor(private readonly opts: InstallerOptions) {}

  problem(): Problem {
    return this.current;
  }

  /** Installs the binary and the preload library (each when it differs). */
  installBinary(): boolean {
    const p = this.opts.preload;
    if (p && existsSync(p.source)) {
      mkdirSync(p.dir, { recursive: true });
      this.installFile(p.source, join(p.dir, basename(p.source)), 0o644, 'preload library');
    }
    return this.installFile(
      this.opts.binarySource,
      join(this.opts.binDir, BINARY_NAME),
      0o755,
      'CNI plugin binary',
    );
  }

  private installFile(source: string, dest: string, mode: number, what: string): boolean {
    if (existsSync(dest) && sha256File(dest) === sha256File(source)) return false;
    copyAtomic(source, dest, mode);
    this.opts.logger.info({ dest }, `${what} installed`);
    return true;
  }

  /** Puts our entry into the active config; reports and keeps the file when it cannot. */
  ensureChained(): Problem {
    if (this.uninstalled()) return this.report(undefined);
    const file = activeConfFile(this.opts.confDir);
    if (!file)
      return this.report(
        `no CNI configuration in ${this.opts.confDir} yet (waiting for the primary CNI)`,
      );
    const path = join(this.opts.confDir, file);
    const r = insertPlugin(file, readFileSync(path, 'utf8'), pluginEntry(this.opts));
    if (!r.ok) return this.report(r.error);
    if (r.changed) {
      const mode = statSync(path).mode & 0o777;
      writeAtomic(join(this.opts.confDir, r.file), r.text, mode);
      if (r.file !== file) rmSync(path, { force: true });
      this.opts.logger.info(
        { file: r.file, from: file },
        'erdma-smcr chained into the CNI configuration',
      );
    }
    return this.report(undefined);
  }

  private report(problem: Problem): Problem {
    if (problem !== this.current) {
      if (problem) this.opts.logger.warn({ problem }, 'CNI chain not in place');
      this.opts.onStatus?.(problem);
    }
    this.current = problem;
    return problem;
  }

  /** Installs (a starting agent clears an uninstall marker: starting means installing), then watches the conf dir. */
  async start(): Promise<void> {
    if (this.opts.uninstallMarker) rmSync(this.opts.uninstallMarker, { force: true });
    this.installBinary();
    await this.pass();
    this.watcher = watch(this.opts.confDir, { persistent: false }, () => this.opts.wake?.());
  }

  /** Puts the entry back if it is missing. */
  async pass(): Promise<void> {
    try {
      this.ensureChained();
    } catch (err) {
      this.report(`cannot update the CNI configuration: ${(err as Error).message}`);
    }
  }

  private uninstalled(): boolean {
    return this.opts.uninstallMarker !== undefined && existsSync(this.opts.uninstallMarker);
  }

  /** Removes our entry from every config file and our binary; nothing else. */
  uninstall(): void {
    if (this.opts.uninstallMarker) {
      mkdirSync(dirname(this.opts.uninstallMarker), { recursive: true });
      writeFileSync(
        this.opts.uninstallMarker,
        `uninstalled at ${new Date().toISOString()}; a starting agent installs again\n`,
      );
    }
    if (existsSync(this.opts.confDir)) {
      for (const f of readdirSync(this.opts.confDir).filter((n) => n.endsWith('.conflist'))) {
        const path = join(this.opts.confDir, f);
        const r = removePlugin(f, readFileSync(path, 'utf8'));
        if (r.ok && r.changed) {
          writeAtomic(path, r.text, statSync(path).mode & 0o777);
          this.opts.logger.info({ file: f }, 'erdma-smcr removed from the CNI configuration');
        }
      }
    }
    rmSync(join(this.opts.binDir, BINARY_NAME), { force: true });
    const p = this.opts.preload;
    if (p) rmSync(join(p.dir, basename(p.source)), { force: true });
  }

  async close(): Promise<void> {
    this.watcher?.close();
  }
}
