// Chaining our plugin into the node's CNI configuration, on temp dirs shaped like real nodes.
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  activeConfFile,
  CniInstaller,
  insertPlugin,
  PLUGIN_TYPE,
  removePlugin,
} from '../../../../src/agent/network/cni-install.js';
import { until } from '../../../helpers/wait.js';

const terway = {
  cniVersion: '0.4.0',
  name: 'terway-chainer',
  plugins: [
    { type: 'terway', eniip_virtual_type: 'IPVlan', capabilities: { bandwidth: true } },
    { type: 'cilium-cni', enable_debug: false },
  ],
};
const flannel = {
  name: 'cbr0',
  cniVersion: '0.3.1',
  plugins: [
    { type: 'flannel', delegate: { hairpinMode: true, isDefaultGateway: true } },
    { type: 'portmap', capabilities: { portMappings: true } },
  ],
};
const bridgeConf = {
  cniVersion: '1.0.0',
  name: 'mynet',
  type: 'bridge',
  bridge: 'cni0',
  isGateway: true,
  ipam: { type: 'host-local', subnet: '10.22.0.0/16' },
};

const logger = pino({ level: 'silent' });

describe('CNI chaining', () => {
  const dirs: string[] = [];
  const installers: CniInstaller[] = [];
  afterEach(() => {
    for (const i of installers.splice(0)) void i.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function node(files: Record<string, string>): {
    conf: string;
    bin: string;
    src: string;
    installer: CniInstaller;
    problems: (string | undefined)[];
    make: () => CniInstaller;
  } {
    const root = mkdtempSync(join(tmpdir(), 'cni-node-'));
    dirs.push(root);
    const conf = join(root, 'etc/cni/net.d');
    const bin = join(root, 'opt/cni/bin');
    mkdirSync(conf, { recursive: true });
    mkdirSync(bin, { recursive: true });
    for (const [name, text] of Object.entries(files))
      writeFileSync(join(conf, name), text, { mode: 0o644 });
    const src = join(root, 'erdma-smcr-image-binary');
    writeFileSync(src, '#!/bin/sh\necho plugin v1\n');
    const problems: (string | undefined)[] = [];
    const marker = join(root, 'var/lib/cni/erdma-smcr/.uninstalled');
    const make = (): CniInstaller => {
      // wake: what the orchestrator does when the conf dir changes (a pass soon).
      const i: CniInstaller = new CniInstaller({
        confDir: conf,
        binDir: bin,
        binarySource: src,
        pnetIdFile: '/run/erdma-smcr/pnetid',
        stateDir: '/var/lib/cni/erdma-smcr',
        logFile: '/var/log/erdma-smcr/cni.log',
        logger,
        onStatus: (p) => problems.push(p),
        wake: () => void i.pass(),
        uninstallMarker: marker,
      });
      installers.push(i);
      return i;
    };
    const installer = make();
    return { conf, bin, src, installer, problems, make };
  }

  const json = (path: string): { plugins: { type: string }[]; [k: string]: unknown } =>
    JSON.parse(readFileSync(path, 'utf8'));

  it('appends our entry to a Terway-like conflist, once, keeping everything else', async () => {
    const n = node({ '10-terway.conflist': JSON.stringify(terway) });
    await n.installer.start();
    const doc = json(join(n.conf, '10-terway.conflist'));
    expect(doc.plugins.slice(0, 2)).toEqual(terway.plugins);
    expect(doc.plugins[2]).toEqual({
      type: PLUGIN_TYPE,
      capabilities: { 'io.kubernetes.cri.pod-annotations': true },
      pnetIdFile: '/run/erdma-smcr/pnetid',
      stateDir: '/var/lib/cni/erdma-smcr',
      logFile: '/var/log/erdma-smcr/cni.log',
    });
    expect({ ...doc, plugins: undefined }).toEqual({ ...terway, plugins: undefined });
    const before = readFileSync(join(n.conf, '10-terway.conflist'), 'utf8');
    expect(n.installer.ensureChained()).toBeUndefined();
    expect(readFileSync(join(n.conf, '10-terway.conflist'), 'utf8')).toBe(before);
    expect(statSync(join(n.bin, 'erdma-smcr')).mode & 0o777).toBe(0o755);
    expect(readdirSync(n.bin)).toEqual(['erdma-smcr']);
  });

  it('edits only the file runtimes load: the first by name', async () => {
    const n = node({
      '10-flannel.conflist': JSON.stringify(flannel),
      '99-loopback.conf': JSON.stringify({ cniVersion: '0.3.1', name: 'lo', type: 'loopback' }),
    });
    expect(activeConfFile(n.conf)).toBe('10-flannel.conflist');
    await n.installer.start();
    expect(json(join(n.conf, '10-flannel.conflist')).plugins.map((p) => p.type)).toEqual([
      'flannel',
      'portmap',
      PLUGIN_TYPE,
    ]);
    expect(JSON.parse(readFileSync(join(n.conf, '99-loopback.conf'), 'utf8'))).toEqual({
      cniVersion: '0.3.1',
      name: 'lo',
      type: 'loopback',
    });
  });

  it('converts a single-plugin .conf into a .conflist', async () => {
    const n = node({ '10-bridge.conf': JSON.stringify(bridgeConf) });
    await n.installer.start();
    expect(existsSync(join(n.conf, '10-bridge.conf'))).toBe(false);
    const doc = json(join(n.conf, '10-bridge.conflist'));
    const { cniVersion, name, ...plugin } = bridgeConf;
    expect(doc).toMatchObject({ cniVersion, name });
    expect(doc.plugins[0]).toEqual(plugin);
    expect(doc.plugins[1]?.type).toBe(PLUGIN_TYPE);
  });

  it('re-inserts our entry when the primary CNI rewrites its file', async () => {
    const n = node({ '10-flannel.conflist': JSON.stringify(flannel) });
    await n.installer.start();
    writeFileSync(
      join(n.conf, '10-flannel.conflist'),
      JSON.stringify({ ...flannel, cniVersion: '1.0.0' }),
    );
    await until('our entry back', () => {
      const d = json(join(n.conf, '10-flannel.conflist'));
      return d.cniVersion === '1.0.0' && d.plugins.at(-1)?.type === PLUGIN_TYPE;
    });
    expect(
      json(join(n.conf, '10-flannel.conflist')).plugins.filter((p) => p.type === PLUGIN_TYPE),
    ).toHaveLength(1);
  });

  it('never writes a broken file, reports it, and chains once it is fixed', async () => {
    const broken = '{"name": "cbr0", "plugins": [ {"type": "flannel"}, ';
    const n = node({ '10-flannel.conflist': broken });
    await n.installer.start();
    expect(readFileSync(join(n.conf, '10-flannel.conflist'), 'utf8')).toBe(broken);
    expect(n.installer.problem()).toMatch(
      /10-flannel\.conflist is not valid JSON .*left untouched/,
    );
    writeFileSync(join(n.conf, '10-flannel.conflist'), JSON.stringify(flannel));
    await until('chained after the fix', () => n.installer.problem() === undefined);
    expect(json(join(n.conf, '10-flannel.conflist')).plugins.at(-1)?.type).toBe(PLUGIN_TYPE);
    expect(n.problems.at(-1)).toBeUndefined();
  });

  it('waits for the primary CNI when the conf dir is empty', async () => {
    const n = node({});
    await n.installer.start();
    expect(n.installer.problem()).toMatch(/no CNI configuration .* yet/);
    writeFileSync(join(n.conf, '05-terway.conflist'), JSON.stringify(terway));
    await until('chained', () => n.installer.problem() === undefined);
  });

  it('uninstall removes only our entry and our binary', async () => {
    const n = node({ '10-terway.conflist': JSON.stringify(terway) });
    writeFileSync(join(n.bin, 'bridge'), 'other plugin');
    await n.installer.start();
    await n.installer.close();
    n.installer.uninstall();
    expect(json(join(n.conf, '10-terway.conflist'))).toEqual(terway);
    expect(readdirSync(n.bin)).toEqual(['bridge']);
  });

  it("uninstall from another process (the README's exec) is not undone by the agent still running, and a new agent installs again", async () => {
    const n = node({ '10-terway.conflist': JSON.stringify(terway) });
    await n.installer.start(); // the running agent, watching the conf dir
    expect(json(join(n.conf, '10-terway.conflist')).plugins.map((p) => p.type)).toContain(
      PLUGIN_TYPE,
    );
    n.make().uninstall(); // `kubectl exec ... agent --uninstall`
    // The running agent's next pass (after its watch fired, or on its schedule) leaves it out.
    await n.installer.pass();
    expect(json(join(n.conf, '10-terway.conflist'))).toEqual(terway);
    expect(n.installer.problem()).toBeUndefined();
    expect(existsSync(join(n.bin, 'erdma-smcr'))).toBe(false);
    // A new agent pod (a reinstall, a rolling update) installs and chains again.
    await n.make().start();
    expect(json(join(n.conf, '10-terway.conflist')).plugins.map((p) => p.type)).toContain(
      PLUGIN_TYPE,
    );
    expect(existsSync(join(n.bin, 'erdma-smcr'))).toBe(true);
  });

  it('replaces the binary only when it changed', () => {
    const n = node({ '10-terway.conflist': JSON.stringify(terway) });
    expect(n.installer.installBinary()).toBe(true);
    expect(n.installer.installBinary()).toBe(false);
    chmodSync(join(n.bin, 'erdma-smcr'), 0o755);
    writeFileSync(join(n.bin, 'erdma-smcr'), 'tampered');
    expect(n.installer.installBinary()).toBe(true);
    expect(readFileSync(join(n.bin, 'erdma-smcr'), 'utf8')).toContain('plugin v1');
  });

  it('compares and copies a binary of megabytes in chunks: a change in its last byte counts', () => {
    const n = node({ '10-terway.conflist': JSON.stringify(terway) });
    // The shipped plugin is about 1.3 MB (static): the agent hashes it 64 KiB at a time and lets
    // the kernel copy it, so it never holds the file (#43).
    const big = Buffer.alloc(1_300_000 + 17, 0x5a);
    writeFileSync(n.src, big, { mode: 0o644 });
    expect(n.installer.installBinary()).toBe(true);
    const dest = join(n.bin, 'erdma-smcr');
    expect(readFileSync(dest).equals(big)).toBe(true);
    expect(statSync(dest).mode & 0o777).toBe(0o755);
    expect(n.installer.installBinary()).toBe(false);
    big[big.length - 1] = 0x5b;
    writeFileSync(n.src, big);
    expect(n.installer.installBinary()).toBe(true);
    expect(readFileSync(dest).equals(big)).toBe(true);
    expect(readdirSync(n.bin).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('pure edits: insert is idempotent, remove leaves other files alone', () => {
    const once = insertPlugin('a.conflist', JSON.stringify(terway), { type: PLUGIN_TYPE });
    expect(once.ok && once.changed).toBe(true);
    const twice = once.ok ? insertPlugin('a.conflist', once.text, { type: PLUGIN_TYPE }) : once;
    expect(twice.ok && !twice.changed).toBe(true);
    expect(removePlugin('a.conflist', JSON.stringify(terway))).toMatchObject({
      ok: true,
      changed: false,
    });
    expect(insertPlugin('a.conflist', '[]', {})).toMatchObject({ ok: false });
    expect(insertPlugin('a.conflist', '{"plugins": "x"}', {})).toMatchObject({
      ok: false,
      error: 'a.conflist has no "plugins" list of objects; left untouched',
    });
  });
});
