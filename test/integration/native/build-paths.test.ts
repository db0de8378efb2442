// #80 item 12: a checkout's build stays inside the checkout. `make -C native` used to fetch Debian's
// cJSON source into /var/cache/erdma-smcr (root-only, shared by every checkout) unless CJSON_DIR
// was set; the default is now below native/.
import { spawnSync } from 'node:child_process';
import { isAbsolute } from 'node:path';
import { describe, expect, it } from 'vitest';

/** The value make resolves for VAR in native/Makefile, with the environment given (no target built). */
function makeVar(name: string, env: NodeJS.ProcessEnv): string | undefined {
  const r = spawnSync('make', ['-C', 'native', '-p', '-n', '-q', 'clean'], { encoding: 'utf8', env });
  return new RegExp(`^${name} [:?]?= (.*)$`, 'm').exec(r.stdout)?.[1];
}

describe('the native build', () => {
  it("fetches Debian's cJSON source into the checkout unless CJSON_DIR says otherwise", () => {
    const env = { ...process.env };
    delete env.CJSON_DIR;
    const dir = makeVar('CJSON_DIR', env);
    expect(dir).toBe('.cache/cjson-src');
    expect(isAbsolute(dir!)).toBe(false);
    expect(makeVar('CJSON_DIR', { ...env, CJSON_DIR: '/tmp/shared-cjson' })).toBe(
      '/tmp/shared-cjson',
    );
  });
});
