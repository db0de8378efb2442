// Runs a Dockerfile's steps as a script, one directory per stage, so a test can check that the
// image build produces what CI builds (no Docker engine runs here). Parsing is dockerfile-ast's.
// FROM starts an empty stage directory (the base image's own files are not reproduced); COPY
// copies from the build context or another stage; WORKDIR and ENV apply; RUN runs with bash in the
// stage's working directory, with an npm cache of its own (a Dockerfile may clean its cache, and
// this machine's must survive). `apt-get` steps are not run: their packages must already be
// installed on this machine, which is checked instead.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DockerfileParser, type Copy, type From } from 'dockerfile-ast';

export interface StageResult {
  readonly name: string;
  readonly root: string;
}

export interface DockerfileRun {
  readonly stages: readonly StageResult[];
  readonly final: StageResult;
  readonly user: string;
  readonly entrypoint: string;
  readonly cmd: string;
  readonly baseImages: readonly string[];
}

/** Packages an apt-get install line asks for. */
export function aptPackages(cmd: string): string[] {
  const m = /apt-get install ([^&|;]+)/.exec(cmd);
  return (m?.[1] ?? '').split(/\s+/).filter((w) => w !== '' && !w.startsWith('-'));
}

/** Defaults of the ARGs declared before the first FROM (usable in FROM lines). */
function argDefaults(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const ins of DockerfileParser.parse(text).getInstructions()) {
    if (ins.getKeyword() === 'FROM') break;
    const m = /^(\w+)=("?)(.*)\2$/.exec((ins.getArgumentsContent() ?? '').trim());
    if (ins.getKeyword() === 'ARG' && m) out[m[1] as string] = m[3] as string;
  }
  return out;
}

/** Runs a shell command asynchronously (the test worker's event loop stays responsive). */
function sh(cmd: string, cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('bash', ['-ec', cmd], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolvePromise()
        : reject(new Error(`RUN ${cmd} failed (${code}):\n${output.slice(-4000)}`)),
    );
  });
}

/** This machine's npm cache directory (`npm config get cache`). */
export function npmCacheDir(): string {
  return execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
}

/**
 * A private npm cache for the steps, seeded from this machine's so `npm ci` stays offline-fast:
 * cacache never rewrites a content file (new content is renamed into place), so content is
 * hard-linked where the two directories share a filesystem (copied where not); the index is
 * appended to, so it is copied.
 */
function privateNpmCache(out: string): string {
  const dir = join(out, 'npm-cache', '_cacache');
  const cache = join(npmCacheDir(), '_cacache');
  mkdirSync(dir, { recursive: true });
  if (existsSync(join(cache, 'content-v2'))) {
    try {
      execFileSync('cp', ['-al', join(cache, 'content-v2'), dir], { stdio: 'ignore' });
    } catch {
      cpSync(join(cache, 'content-v2'), join(dir, 'content-v2'), { recursive: true });
    }
  }
  if (existsSync(join(cache, 'index-v5')))
    cpSync(join(cache, 'index-v5'), join(dir, 'index-v5'), { recursive: true });
  return join(out, 'npm-cache');
}

export async function runDockerfile(
  file: string,
  context: string,
  out: string,
  log: (s: string) => void = () => {},
): Promise<DockerfileRun> {
  const text = readFileSync(file, 'utf8');
  const npmCache = privateNpmCache(out);
  const df = DockerfileParser.parse(text);
  const args = argDefaults(text);
  const stages: StageResult[] = [];
  const baseImages: string[] = [];
  let cur: StageResult | undefined;
  let cwd = '/';
  let env: Record<string, string> = {};
  let user = 'root';
  let entrypoint = '';
  let cmd = '';
  const inStage = (p: string): string =>
    join((cur as StageResult).root, p.startsWith('/') ? p : join(cwd, p));
  for (const ins of df.getInstructions()) {
    const kw = ins.getKeyword();
    const argText = (ins.getArgumentsContent() ?? '').replace(/\\\n\s*/g, ' ');
    if (kw === 'FROM') {
      const f = ins as From;
      baseImages.push(
        (f.getImageName() ?? '').replace(/^\$\{(\w+)\}$/, (_m, v: string) => args[v] ?? ''),
      );
      const name = f.getBuildStage() ?? `stage${stages.length}`;
      cur = { name, root: join(out, name) };
      mkdirSync(cur.root, { recursive: true });
      stages.push(cur);
      cwd = '/';
      env = {};
      continue;
    }
    if (!cur) continue;
    switch (kw) {
      case 'WORKDIR':
        cwd = argText.startsWith('/') ? argText : join(cwd, argText);
        mkdirSync(inStage('.'), { recursive: true });
        break;
      case 'ENV': {
        const [k, ...v] = argText.split(/[=\s]/);
        env[k as string] = v.join(' ');
        break;
      }
      case 'COPY': {
        const c = ins as Copy;
        const from = c.getFromFlag()?.getValue() ?? undefined;
        const parts = c
          .getArguments()
          .map((a) => a.getValue())
          .filter((a) => !a.startsWith('--'));
        const dest = parts.pop() as string;
        const srcRoot = from ? (stages.find((s) => s.name === from) as StageResult).root : context;
        for (const src of parts) {
          const source = join(srcRoot, src);
          const isDir = statSync(source).isDirectory();
          const target =
            dest.endsWith('/') && !isDir
              ? join(inStage(dest), src.split('/').pop() as string)
              : inStage(dest);
          cpSync(source, target, { recursive: true });
        }
        break;
      }
      case 'RUN': {
        if (/apt-get/.test(argText)) {
          for (const pkg of aptPackages(argText))
            execFileSync('dpkg-query', ['-W', '-f=${Status}', pkg]);
          log(`skipped (packages installed here): ${argText}`);
          break;
        }
        log(`RUN ${argText}`);
        await sh(argText, inStage('.'), { ...process.env, npm_config_cache: npmCache, ...env });
        break;
      }
      case 'USER':
        user = argText;
        break;
      case 'ENTRYPOINT':
        entrypoint = argText;
        break;
      case 'CMD':
        cmd = argText;
        break;
      default:
        break;
    }
  }
  return { stages, final: stages.at(-1) as StageResult, user, entrypoint, cmd, baseImages };
}
