// The node-restriction ValidatingAdmissionPolicy (manifests/components/node-restriction) on real
// API servers, 1.37 and 1.35, with the real node-name claim: the agent's token is a projected
// ServiceAccount token bound to the agent's pod (TokenRequest with a Pod as bound object, as the
// kubelet asks for it), which the API server gives the pod's node name; its authenticator turns
// that into userInfo.extra["authentication.kubernetes.io/node-name"]. The agent's own labeller
// (src/agent/node/labels.ts) with that token labels node A; the same token is refused on node B,
// and on a label key that is not ours, with the API server's own message. The negative control:
// without the policy, the same token labels node B (RBAC alone cannot say "your own Node").
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectsOf, RBAC_KINDS } from '../../helpers/manifest-objects.js';
import { NodeLabeler } from '../../../src/agent/node/labels.js';
import { ApiError, type KubeClient } from '../../../src/cluster/client.js';
import { loadKubeClient } from '../../../src/cluster/kubeconfig.js';
import {
  ensureBinaries,
  startControlPlane,
  type ControlPlane,
} from '../../harness/k8s/control-plane.js';
import { k8s135, requires } from '../../helpers/requires.js';
import { until } from '../../helpers/wait.js';

const why = requires(
  'the node-restriction suite (real API servers 1.37 and 1.35)',
  ensureBinaries,
  k8s135,
);
const POLICY = 'manifests/components/node-restriction/policy.yaml';
const CAPABLE = 'smcr.erdma.io/capable';
const SLICES = '/apis/resource.k8s.io/v1/resourceslices';
const DRIVER = 'erdma.smcr.erdma.io';
/** A ResourceSlice as our DRA driver writes it (src/dra/slice.ts), with no device. */
const slice = (name: string, node: string, driver = DRIVER): object => ({
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceSlice',
  metadata: { name },
  spec: {
    driver,
    nodeName: node,
    pool: { name: node, generation: 1, resourceSliceCount: 1 },
    devices: [],
  },
});

describe.skipIf(why !== '').each(['1.37', '1.35'] as const)(
  'the node-restriction policy on Kubernetes %s',
  (minor) => {
    let cp: ControlPlane;
    let client: KubeClient;
    /** The DRA driver's client: a token bound to its pod on node A. */
    let dra: KubeClient;
    const log = pino({ level: 'silent' });

    const kubectl = async (args: string[], input?: string): Promise<string> => {
      const r = await cp.kubectl(args, input);
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const labels = async (node: string): Promise<Record<string, string>> =>
      (
        JSON.parse(await kubectl(['get', 'node', node, '-o', 'json'])) as {
          metadata: { labels?: Record<string, string> };
        }
      ).metadata.labels ?? {};
    /** The API server's message for a refused call, as our client reports it. */
    const refusal = async (call: Promise<unknown>): Promise<string> => {
      const err = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, 'the call was refused').toBeInstanceOf(ApiError);
      const e = err as ApiError;
      expect(e.code).toBe(403);
      return (JSON.parse(e.body) as { message: string }).message;
    };

    beforeAll(async () => {
      cp = await startControlPlane({ minor });
      await kubectl(['apply', '-f', 'manifests/base/namespace.yaml']);
      await kubectl(['apply', '-f', '-'], objectsOf('manifests/base/agent.yaml', RBAC_KINDS));
      await kubectl(['apply', '-f', 'manifests/components/dra/dra.yaml']);
      for (const name of ['node-a', 'node-b'])
        await kubectl(
          ['create', '-f', '-'],
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Node',
            metadata: { name, labels: { team: 'a' } },
          }),
        );
      // The agent's and the DRA driver's pods, bound to node A (no kubelet here: they stay
      // Pending, which their tokens do not mind).
      const boundClient = async (sa: string, pod: string): Promise<KubeClient> => {
        await kubectl(
          ['create', '-f', '-'],
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: pod, namespace: 'erdma-smcr' },
            spec: {
              serviceAccountName: sa,
              automountServiceAccountToken: false,
              nodeName: 'node-a',
              containers: [{ name: 'c', image: 'registry.invalid/erdma-smcr:1' }],
            },
          }),
        );
        const token = (
          await kubectl([
            'create',
            'token',
            sa,
            '-n',
            'erdma-smcr',
            '--bound-object-kind',
            'Pod',
            '--bound-object-name',
            pod,
            '--duration',
            '1h',
          ])
        ).trim();
        const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as {
          'kubernetes.io': { node?: { name: string }; pod?: { name: string } };
        };
        console.log(`${sa}'s bound token (${minor}): ${JSON.stringify(claims['kubernetes.io'])}`);
        expect(claims['kubernetes.io'].node?.name).toBe('node-a');
        const file = join(cp.dir, `kubeconfig-${pod}`);
        writeFileSync(
          file,
          (await kubectl(['config', 'view', '--raw', '--minify', '-o', 'json'])).replace(
            /"token": "[^"]*"/,
            `"token": "${token}"`,
          ),
          { mode: 0o600 },
        );
        return loadKubeClient(file, {});
      };
      client = await boundClient('erdma-smcr-agent', 'agent-a');
      dra = await boundClient('erdma-smcr-dra', 'dra-a');
    }, 180_000);

    afterAll(async () => {
      await cp?.stop();
    });

    it("without the policy, node A's token labels node B: RBAC alone allows it (the negative control)", async () => {
      const changed = await new NodeLabeler(client, 'node-b', log).apply({ [CAPABLE]: 'true' });
      expect(changed).toEqual([CAPABLE]);
      expect((await labels('node-b'))[CAPABLE]).toBe('true');
      await kubectl(['label', 'node', 'node-b', `${CAPABLE}-`]);
      // The same for the DRA driver: RBAC lets node A's driver write node B's slice.
      await dra.request('POST', SLICES, { body: slice('node-b', 'node-b') });
      await dra.request('DELETE', `${SLICES}/node-b`);
    });

    it("with the policy, node A's agent labels node A and is refused on node B and on a key not ours", async () => {
      await kubectl(['apply', '-f', POLICY]);
      // The policy takes effect when the API server has compiled it: poll on node B.
      const toB = await until(
        'the policy refusing node B',
        async () => {
          try {
            await new NodeLabeler(client, 'node-b', log).apply({ [CAPABLE]: 'true' });
            await kubectl(['label', 'node', 'node-b', `${CAPABLE}-`]);
            return undefined;
          } catch (e) {
            return e instanceof ApiError ? e : undefined;
          }
        },
        30_000,
      );
      expect(toB.code).toBe(403);
      const messageB = (JSON.parse(toB.body) as { message: string }).message;
      console.log(`node A's agent on node B (${minor}): ${messageB}`);
      expect(messageB).toMatch(
        /ValidatingAdmissionPolicy 'erdma-smcr-agent-own-node' with binding 'erdma-smcr-agent-own-node' denied request: the erdma-smcr agent may change only the Node it runs on, not node-b/,
      );
      expect((await labels('node-b'))[CAPABLE]).toBeUndefined();

      expect(await new NodeLabeler(client, 'node-a', log).apply({ [CAPABLE]: 'true' })).toEqual([
        CAPABLE,
      ]);
      expect(await labels('node-a')).toEqual({ team: 'a', [CAPABLE]: 'true' });

      // A forged request: our labeller refuses such keys itself, so the raw client sends it.
      const messageKey = await refusal(
        client.request('PATCH', '/api/v1/nodes/node-a', {
          body: { metadata: { labels: { team: 'b' } } },
          contentType: 'application/merge-patch+json',
        }),
      );
      console.log(`node A's agent on a label not ours (${minor}): ${messageKey}`);
      expect(messageKey).toMatch(
        /denied request: the erdma-smcr agent may change only smcr\.erdma\.io\/ labels of its Node/,
      );
      expect((await labels('node-a'))['team']).toBe('a');
    });

    it("with the policy, node A's DRA driver writes node A's slice of our driver and is refused node B's and another driver's", async () => {
      // (The policy was applied by the test above.)
      const messageB = await until(
        'the policy refusing the slice of node B',
        async () => {
          try {
            await dra.request('POST', SLICES, { body: slice('node-b', 'node-b') });
            // Not refused yet: taken away by the admin, so the next try meets the policy again.
            await kubectl(['delete', 'resourceslice', 'node-b', '--ignore-not-found']);
            return undefined;
          } catch (e) {
            return e instanceof ApiError && e.code === 403
              ? (JSON.parse(e.body) as { message: string }).message
              : undefined;
          }
        },
        30_000,
      );
      console.log(`node A's DRA driver on node B's slice (${minor}): ${messageB}`);
      expect(messageB).toMatch(
        /ValidatingAdmissionPolicy 'erdma-smcr-dra-own-slice' with binding 'erdma-smcr-dra-own-slice' denied request: the erdma-smcr DRA driver may write only the ResourceSlices of the Node it runs on, not node-b/,
      );
      await dra.request('POST', SLICES, { body: slice('node-a', 'node-a') });
      await dra.request('PUT', `${SLICES}/node-a`, {
        body: {
          ...(await dra.request<object>('GET', `${SLICES}/node-a`)),
          spec: (slice('node-a', 'node-a') as { spec: object }).spec,
        },
      });
      const other = await refusal(
        dra.request('POST', SLICES, { body: slice('gpu-a', 'node-a', 'gpu.example.com') }),
      );
      expect(other).toMatch(
        /denied request: the erdma-smcr DRA driver may write only its own driver's ResourceSlices/,
      );
      // A slice of node B made by someone else: node A's driver may not delete it.
      await kubectl(['create', '-f', '-'], JSON.stringify(slice('node-b', 'node-b')));
      const del = await refusal(dra.request('DELETE', `${SLICES}/node-b`));
      expect(del).toMatch(/may write only the ResourceSlices of the Node it runs on, not node-b/);
      await dra.request('DELETE', `${SLICES}/node-a`);
    });
  },
);
