// What an admin coming from ACK's eRDMA controller types into this chart (#95): ACK's value names
// render what ours do, its top-level keys that have no place here are refused naming ours, and the
// image is a tag that a runtime can pull, or a digest. helm 4 alone (test/harness/k8s/build.sh helm).
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHART, helmEnv, helmTemplate } from '../../harness/helm.js';
import { binPath } from '../../harness/k8s/control-plane.js';
import { k8sBinaries, requires } from '../../helpers/requires.js';

const why = requires('the chart values suite (helm 4)', k8sBinaries(['helm']));

function rendered(values: readonly string[]): string {
  const r = helmTemplate(values);
  if (r.status !== 0) throw new Error(`helm template ${values.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const images = (text: string): string[] =>
  [...new Set([...text.matchAll(/^\s*image: (\S+)$/gm)].map((m) => m[1]!))].sort();

describe.skipIf(why !== '')(
  "the chart takes ACK's value names and refuses what no runtime pulls",
  () => {
    it.each([
      [
        ['--set', 'agent.preferDriver=compat', '--set', 'agent.allocateAllDevices=true'],
        ['--set', 'webhook.clusterProfile.driverMode=compat', '--set', 'devices.allocation=all'],
      ],
      [
        ['--set', 'webhookFailurePolicy=Fail', '--set', 'webhookTimeoutSeconds=10'],
        ['--set', 'webhook.failurePolicy=Fail', '--set', 'webhook.timeoutSeconds=10'],
      ],
    ] as const)("ACK's %j renders the same objects as our %j", (ack, ours) => {
      const a = rendered(ack);
      expect(a).toBe(rendered(ours));
      // And not the defaults' (the value reached the objects).
      expect(a).not.toBe(rendered([]));
    });

    it("ACK's allocateAllDevices=false is our default, numa", () => {
      expect(rendered(['--set', 'agent.allocateAllDevices=false'])).toBe(rendered([]));
    });

    it("the cluster profile and the device configuration carry what ACK's names said", () => {
      const docs = yaml.loadAll(
        rendered(['--set', 'agent.preferDriver=compat', '--set', 'agent.allocateAllDevices=true']),
      ) as { kind?: string; data?: Record<string, string> }[];
      const data = docs
        .filter((d) => d?.kind === 'ConfigMap')
        .map((d) => Object.values(d.data ?? {}).join('\n'));
      expect(data.join('\n')).toMatch(/driverMode: compat/);
      expect(data.join('\n')).toMatch(/allocation: all/);
    });

    it('NOTES say that every annotated pod is denied when the driver mode is not default (#102)', () => {
      const notes = (args: readonly string[]): string => {
        const r = spawnSync(
          binPath('helm'),
          ['install', '--dry-run=client', 'erdma-smcr', CHART, '-n', 'erdma-smcr', ...args],
          { encoding: 'utf8', env: helmEnv() },
        );
        if (r.status !== 0) throw new Error(r.stderr);
        return r.stdout.slice(r.stdout.indexOf('NOTES:'));
      };
      for (const args of [
        ['--set', 'agent.preferDriver=ofed'],
        ['--set', 'webhook.clusterProfile.driverMode=compat'],
      ])
        expect(notes(args)).toMatch(/driver mode (ofed|compat): .*\n.*DENIES every pod annotated/);
      expect(notes([])).not.toMatch(/DENIES/);
    });

    it('says what a Fail webhook without matchConditions holds up: every pod, not only annotated ones (#102)', () => {
      const text = rendered([
        '--set',
        'webhook.failurePolicy=Fail',
        '--set',
        'webhook.matchConditions=false',
      ]);
      expect(text).not.toMatch(/matchConditions:/);
      expect(text).toMatch(/# With failurePolicy Fail that means EVERY pod creation and update/);
      expect(text).not.toMatch(/# failurePolicy Ignore, for pods/);
      const byDefault = rendered(['--kube-version', '1.37.0']);
      expect(byDefault).toMatch(/\n# matchConditions: the API server sends the webhook only/);
      expect(byDefault).not.toMatch(/EVERY pod creation/);
    });

    it("a mirrored image reaches the preload init container: the webhook's ERDMA_SMCR_PRELOAD_IMAGE is its own image, by Helm and by kustomize (#102)", () => {
      const preloadImage = (text: string): string | undefined =>
        /name: ERDMA_SMCR_PRELOAD_IMAGE\n\s+value: "?([^"\n]+)"?/.exec(text)?.[1];
      expect(
        preloadImage(
          rendered([
            '--set',
            'image.repository=reg.example/me/erdma-smcr',
            '--set',
            'image.tag=v9',
          ]),
        ),
      ).toBe('reg.example/me/erdma-smcr:v9');
      expect(preloadImage(rendered([]))).toMatch(/^ghcr\.io\/erdma-smcr\/erdma-smcr:/);
      // kustomize: `edit set image` writes images:, and the kustomization's replacements copy the
      // webhook's image into the variable after it (kubectl 1.37's kustomize).
      for (const dir of [
        'base',
        'overlays/match-conditions',
        'overlays/cert-manager',
        'overlays/dra',
      ]) {
        const tmp = mkdtempSync(join(tmpdir(), 'kustomize-'));
        try {
          cpSync('manifests', join(tmp, 'manifests'), { recursive: true });
          const k = join(tmp, 'manifests', dir, 'kustomization.yaml');
          writeFileSync(
            k,
            readFileSync(k, 'utf8').replace(
              /newTag: .*/,
              'newName: reg.example/me/erdma-smcr\n    newTag: v9',
            ),
          );
          const r = spawnSync(binPath('kubectl'), ['kustomize', join(tmp, 'manifests', dir)], {
            encoding: 'utf8',
          });
          expect(r.status, r.stderr).toBe(0);
          expect(preloadImage(r.stdout), dir).toBe('reg.example/me/erdma-smcr:v9');
        } finally {
          rmSync(tmp, { recursive: true, force: true });
        }
      }
    });

    it.each([
      'reg.example/me/erdma-smcr:v1',
      'reg.example/me/erdma-smcr@sha256:' + 'a'.repeat(64),
      'erdma-smcr:v1',
    ])(
      'refuses image.repository=%s (a tag or digest in it), as it refuses image.tag=bad:tag (#102)',
      (repo) => {
        const r = helmTemplate(['--set', `image.repository=${repo}`]);
        expect(r.status).not.toBe(0);
        expect(r.stderr).toMatch(/image\/repository|image\.repository/);
        expect(helmTemplate(['--set', 'image.tag=bad:tag']).status).not.toBe(0);
      },
    );

    it.each(['reg.example/me/erdma-smcr', 'reg.example:5000/me/erdma-smcr', 'erdma-smcr'])(
      'takes image.repository=%s',
      (repo) => {
        expect(images(rendered(['--set', `image.repository=${repo}`]))).toEqual([`${repo}:0.1.0`]);
      },
    );

    it('refuses devices.path=dra below Kubernetes 1.37, naming the fix; renders it on 1.37 (#102)', () => {
      const old = helmTemplate(['--set', 'devices.path=dra', '--kube-version', '1.35.0']);
      expect(old.status).not.toBe(0);
      expect(old.stderr).toMatch(
        /devices\.path=dra needs Kubernetes 1\.37 or later .* Use devices\.path=device-plugin, or both/,
      );
      expect(rendered(['--set', 'devices.path=dra', '--kube-version', '1.37.0'])).toMatch(
        /extendedResourceName: aliyun\/erdma/,
      );
      expect(helmTemplate(['--set', 'devices.path=both', '--kube-version', '1.35.0']).status).toBe(
        0,
      );
    });

    it("takes the profile's podNetworks and serviceNetworks, as the webhook reads them (#100)", async () => {
      const docs = yaml.loadAll(
        rendered([
          '--set-json',
          'webhook.clusterProfile.podNetworks=["10.0.64.0/18","10.0.128.0/18"]',
          '--set-json',
          'webhook.clusterProfile.serviceNetworks=["192.168.0.0/16"]',
        ]),
      ) as { kind?: string; data?: Record<string, string> }[];
      const profile = docs
        .filter((d) => d?.kind === 'ConfigMap')
        .flatMap((d) => Object.values(d.data ?? {}))
        .find((t) => t.includes('podNetworks'));
      expect(profile).toBeDefined();
      // The webhook's own reader takes it, networks and all.
      const { parseProfile, viewFromProfile } = await import('../../../src/cluster/profile.js');
      const view = viewFromProfile(parseProfile(yaml.load(profile!), 'chart'));
      expect(view.podNetworks).toEqual(['10.0.64.0/18', '10.0.128.0/18', '192.168.0.0/16']);
      const bad = helmTemplate(['--set-json', 'webhook.clusterProfile.podNetworks=["10.0.64.0"]']);
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toMatch(/podNetworks/);
    });

    it.each([
      [
        ['--set', 'preferDriver=default'],
        /preferDriver is not a value of this chart: set webhook\.clusterProfile\.driverMode .*agent\.preferDriver/,
      ],
      [
        ['--set', 'allocateAllDevices=true'],
        /allocateAllDevices is not a value of this chart: set devices\.allocation \(all or numa\), or agent\.allocateAllDevices/,
      ],
      [
        ['--set', 'agent.preferDriver=compat', '--set', 'webhook.clusterProfile.driverMode=ofed'],
        /agent\.preferDriver \(ACK's name\) is compat and webhook\.clusterProfile\.driverMode is ofed: they are the same setting/,
      ],
      [
        ['--set', 'agent.allocateAllDevices=false', '--set', 'devices.allocation=all'],
        /agent\.allocateAllDevices \(ACK's name\) is false and devices\.allocation is all/,
      ],
      // Ours given at its default value is still given (#102): the conflict is not hidden.
      [
        [
          '--set',
          'agent.preferDriver=compat',
          '--set',
          'webhook.clusterProfile.driverMode=default',
        ],
        /agent\.preferDriver \(ACK's name\) is compat and webhook\.clusterProfile\.driverMode is default/,
      ],
      [
        ['--set', 'agent.allocateAllDevices=true', '--set', 'devices.allocation=numa'],
        /agent\.allocateAllDevices \(ACK's name\) is true and devices\.allocation is numa/,
      ],
      [
        ['--set', 'webhookFailurePolicy=Fail', '--set', 'webhook.failurePolicy=Ignore'],
        /webhookFailurePolicy \(ACK's name\) is Fail and webhook\.failurePolicy is Ignore/,
      ],
      [
        ['--set', 'webhookTimeoutSeconds=10', '--set', 'webhook.timeoutSeconds=5'],
        /webhookTimeoutSeconds \(ACK's name\) is 10 and webhook\.timeoutSeconds is 5/,
      ],
      [['--set', 'image.tag=bad:tag'], /at '\/image\/tag': 'bad:tag' does not match pattern/],
      [
        ['--set', 'image.digest=sha256:abc'],
        /at '\/image\/digest': 'sha256:abc' does not match pattern/,
      ],
      [
        ['--set', 'image.tag=1.0', '--set', `image.digest=sha256:${'a'.repeat(64)}`],
        /image\.tag and image\.digest are both set/,
      ],
    ] as const)('%j fails, saying what to set', (values, message) => {
      const r = helmTemplate(values);
      expect(r.status).not.toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
    });

    it("ACK's whole values file is refused once, naming every key of its own and where it goes here (#102)", () => {
      // The shape of ACK's chart's values.yaml (deploy/helm/values.yaml): its keys at their defaults.
      const ack = {
        controller: { replicaCount: 1, image: { repository: 'r/controller', tag: 'latest' } },
        agent: {
          image: { repository: 'r/agent', pullPolicy: 'Always', tag: 'latest' },
          preferDriver: '',
          allocateAllDevices: false,
          imagePullSecrets: [],
          nameOverride: '',
          fullnameOverride: '',
        },
        serviceAccount: { create: true, annotations: {}, name: '' },
        podAnnotations: {},
        nodeSelector: {},
        tolerations: [],
        affinity: {},
        webhookFailurePolicy: 'Ignore',
        webhookTimeoutSeconds: 10,
        config: { region: '', enableDevicePlugin: true, enableWebhook: true },
        credentials: { type: '', accessKeyID: '', accessKeySecret: '' },
      };
      const dir = mkdtempSync(join(tmpdir(), 'ack-values-'));
      try {
        const withValues = (v: object) => {
          const file = join(dir, 'values.yaml');
          writeFileSync(file, yaml.dump(v));
          return helmTemplate(['-f', file]);
        };
        const whole = withValues(ack);
        expect(whole.status).not.toBe(0);
        expect(whole.stderr).not.toMatch(/additional properties/);
        for (const key of [
          'affinity (here: nodeSelector',
          'config (here: config.enableDevicePlugin is devices.path',
          'controller (here: none',
          'credentials (here: none',
          'podAnnotations (here: none',
          'serviceAccount (here: none',
          'agent.image (here: image.*',
          'agent.imagePullSecrets (here: imagePullSecrets',
          'agent.nameOverride',
          'agent.fullnameOverride',
        ])
          expect(whole.stderr).toContain(key);
        // Trimmed to the keys the chart shares: its empty tolerations would keep the node
        // DaemonSets off every tainted node, and are refused. (Its empty nodeSelector merges into
        // ours and changes nothing; removing ours, with null, is refused.)
        const {
          controller,
          serviceAccount,
          podAnnotations,
          affinity,
          config,
          credentials,
          ...kept
        } = ack;
        void [controller, serviceAccount, podAnnotations, affinity, config, credentials];
        const trimmed = {
          ...kept,
          agent: { preferDriver: '', allocateAllDevices: false },
        };
        const r1 = withValues(trimmed);
        expect(r1.status).not.toBe(0);
        expect(r1.stderr).toMatch(/tolerations is empty: .*Leave tolerations out for the default/);
        const r2 = helmTemplate(['--set', 'nodeSelector=null']);
        expect(r2.status).not.toBe(0);
        expect(r2.stderr).toMatch(
          /nodeSelector is empty: the node DaemonSets would run on every node/,
        );
        const { tolerations, ...shared } = trimmed;
        void tolerations;
        const r3 = withValues(shared);
        expect(r3.stderr).toBe('');
        // What is left is ACK's timeout, taken: everything else as our defaults.
        expect(r3.stdout).toBe(rendered(['--set', 'webhook.timeoutSeconds=10']));
        expect(r3.stdout).toMatch(/^\s+- operator: Exists$/m);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('an image by tag or by digest, the same for every component', () => {
      expect(images(rendered(['--set', 'image.tag=1.2.3']))).toEqual([
        'ghcr.io/erdma-smcr/erdma-smcr:1.2.3',
      ]);
      const digest = `sha256:${'0123456789abcdef'.repeat(4)}`;
      expect(images(rendered(['--set', `image.digest=${digest}`]))).toEqual([
        `ghcr.io/erdma-smcr/erdma-smcr@${digest}`,
      ]);
    });
  },
);
