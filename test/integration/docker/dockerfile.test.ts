// The Dockerfile, without a Docker engine: linted (dockerfile-utils), bases pinned by digest, and
// its steps run as a script (test/harness/dockerfile-steps.ts) so the image's artifacts can be
// compared with what CI builds and the runtime tree can be run on its own.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { validate } from 'dockerfile-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmCacheDir, runDockerfile, type DockerfileRun } from '../../harness/dockerfile-steps.js';

const text = readFileSync('Dockerfile', 'utf8');

function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(relative(dir, p), createHash('sha256').update(readFileSync(p)).digest('hex'));
    }
  };
  walk(dir);
  return out;
}

describe('Dockerfile', () => {
  it('lints clean', () => {
    const problems = validate(text).map((d) => `${d.range.start.line + 1}: ${d.message}`);
    expect(problems).toEqual([]);
  });

  it('pins every base image by digest, on a Node LTS line', () => {
    const m = /^ARG NODE_IMAGE=node:(\d+)-[\w-]+@sha256:[0-9a-f]{64}$/m.exec(text);
    expect(m, 'NODE_IMAGE pinned by digest').not.toBeNull();
    expect(Number(m?.[1]) % 2, 'an even (LTS) Node major').toBe(0);
    // Every stage from the pinned Node image, but the runtime: scratch with the root built from it.
    const froms = text.match(/^FROM .*/gm) ?? [];
    for (const from of froms.slice(0, -1))
      expect(from).toMatch(/^FROM \$\{NODE_IMAGE\}( AS \w+)?$/);
    expect(froms.at(-1)).toBe('FROM scratch');
  });

  it('keeps secrets, caches and builds out of the build context', () => {
    const ignore = readFileSync('.dockerignore', 'utf8').split('\n');
    for (const p of ['.git', 'node_modules', 'dist', 'native/build', 'webhook-certs'])
      expect(ignore).toContain(p);
  });

  describe('its steps, run as a script', () => {
    let out: string;
    let run: DockerfileRun;
    const steps: string[] = [];

    // This machine's npm cache (the Dockerfile's deps stage runs `npm cache clean --force`).
    const machineCache = join(npmCacheDir(), '_cacache');
    const cacheEntries = (): number =>
      existsSync(machineCache) ? readdirSync(machineCache, { recursive: true }).length : 0;
    let cachedBefore = 0;

    beforeAll(async () => {
      out = mkdtempSync(join(tmpdir(), 'docker-steps-'));
      cachedBefore = cacheEntries();
      run = await runDockerfile('Dockerfile', '.', out, (s) => steps.push(s));
    }, 300_000);
    afterAll(() => {
      if (out) rmSync(out, { recursive: true, force: true });
    });

    it('installs on a build stage only the packages CI installs too', () => {
      const ci = readFileSync('.ci/apt-packages.txt', 'utf8');
      for (const s of steps.filter((x) => x.startsWith('skipped'))) {
        for (const pkg of s
          .match(/install (.*)/)?.[1]
          ?.split(/\s+/)
          .filter((w) => /^[a-z]/.test(w) && !['rm', 'apt-get'].includes(w)) ?? []) {
          if (pkg.startsWith('&&')) break;
          expect(ci).toContain(pkg);
        }
      }
    });

    it("leaves this machine's npm cache alone (the steps' npm has a cache of its own)", () => {
      expect(steps).toContainEqual(expect.stringMatching(/npm ci/));
      expect(cachedBefore).toBeGreaterThan(0); // npm ci, which the tests need, fills it
      expect(cacheEntries()).toBeGreaterThanOrEqual(cachedBefore);
    });

    it('builds the same dist/ and the same static CNI binary as CI', () => {
      const build = run.stages.find((s) => s.name === 'build')?.root as string;
      expect(files(join(build, 'src/dist'))).toEqual(files('dist'));
      const image = readFileSync(join(run.final.root, 'app/native/build/erdma-smcr'));
      expect(createHash('sha256').update(image).digest('hex')).toBe(
        createHash('sha256').update(readFileSync('native/build/erdma-smcr')).digest('hex'),
      );
      expect(
        spawnSync('file', [join(run.final.root, 'app/native/build/erdma-smcr')], {
          encoding: 'utf8',
        }).stdout,
      ).toMatch(/statically linked/);
    });

    it("unpacks cJSON's source inside its build stage, and nothing beside it", () => {
      // Not in /tmp: on a test machine these steps run on the host, whose /tmp they would litter.
      const src = join(run.stages.find((s) => s.name === 'build')?.root as string, 'src');
      expect(existsSync(join(src, 'cjson-src/cJSON.c'))).toBe(true);
      expect(readdirSync(src).filter((f) => f.startsWith('cjson'))).toEqual(['cjson-src']);
    });

    it('ships a runtime without dev dependencies or sources, as a non-root user', () => {
      const app = join(run.final.root, 'app');
      expect(readdirSync(app).sort()).toEqual([
        'bin',
        'dist',
        'docs',
        'native',
        'package.json',
        'proto',
      ]);
      expect(readdirSync(join(app, 'docs'))).toEqual(['admission']); // the sample review the banner names, nothing more
      // The bundle carries the dependencies (#43): no node_modules, no compiled sources besides it.
      expect(readdirSync(join(app, 'dist'))).toEqual(['bundle']);
      expect(existsSync(join(app, 'dist/bundle/main.cjs'))).toBe(true);
      expect(run.user).toBe('65532:65532');
      expect(run.entrypoint).toBe('["node", "/app/bin/erdma-smcr.js"]');
      expect(statSync(join(app, 'native/build/erdma-smcr')).mode & 0o111).not.toBe(0);
    });

    it('the runtime tree alone runs every command: check, devices, the CNI binary, serve', () => {
      const app = join(run.final.root, 'app');
      const cli = (...args: string[]) =>
        spawnSync(process.execPath, [join(app, 'bin/erdma-smcr.js'), ...args], {
          encoding: 'utf8',
          cwd: tmpdir(),
          timeout: 20_000,
        });
      expect(cli('--version').stdout.trim()).toBe(
        JSON.parse(readFileSync('package.json', 'utf8')).version,
      );
      const check = cli('check', join(process.cwd(), 'examples/valid'));
      expect(check.status, check.stderr).toBe(0);
      const devices = cli(
        'devices',
        '--host-root',
        join(process.cwd(), 'test/fixtures/sysfs/node-a'),
      );
      expect(devices.stdout).toMatch(/erdma_0: driver erdma, mode default, SMC-R capable/);
      const version = spawnSync(join(app, 'native/build/erdma-smcr'), [], {
        env: { CNI_COMMAND: 'VERSION' },
        encoding: 'utf8',
      });
      expect(JSON.parse(version.stdout).supportedVersions).toContain('1.1.0');
      const serve = spawnSync(
        process.execPath,
        [
          join(app, 'bin/erdma-smcr.js'),
          'serve',
          '--port',
          '0',
          '--no-metrics',
          '--cert-dir',
          join(out, 'certs'),
        ],
        {
          encoding: 'utf8',
          timeout: 4000,
          killSignal: 'SIGTERM',
          cwd: tmpdir(),
        },
      );
      expect(serve.stdout).toMatch(/listening on https:\/\/127\.0\.0\.1:\d+/);
    });
  });
});
