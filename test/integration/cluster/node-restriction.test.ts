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

describe.skipIf(why !== '').each(['1.37', '1.35'] as const)(
  'the node-restriction policy on Kubernetes %s',
  (minor) => {
    let cp: ControlPlane;
    let client: KubeClient;
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
      for (const f of ['manifests/base/namespace.yaml', 'manifests/base/agent-rbac.yaml'])
        await kubectl(['apply', '-f', f]);
      for (const name of ['node-a', 'node-b'])
        await kubectl(
          ['create', '-f', '-'],
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Node',
            metadata: { name, labels: { team: 'a' } },
          }),
        );
      // The agent's pod, bound to node A (no kubelet here: it stays Pending, which the token does not mind).
      await kubectl(
        ['create', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'agent-a', namespace: 'erdma-smcr' },
          spec: {
            serviceAccountName: 'erdma-smcr-agent',
            automountServiceAccountToken: false,
            nodeName: 'node-a',
            containers: [{ name: 'agent', image: 'registry.invalid/erdma-smcr:1' }],
          },
        }),
      );
      const token = (
        await kubectl([
          'create',
          'token',
          'erdma-smcr-agent',
          '-n',
          'erdma-smcr',
          '--bound-object-kind',
          'Pod',
          '--bound-object-name',
          'agent-a',
          '--duration',
          '1h',
        ])
      ).trim();
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as {
        'kubernetes.io': { node?: { name: string }; pod?: { name: string } };
      };
      console.log(`the agent's bound token (${minor}): ${JSON.stringify(claims['kubernetes.io'])}`);
      expect(claims['kubernetes.io'].node?.name).toBe('node-a');
      const file = join(cp.dir, 'kubeconfig-agent-a');
      writeFileSync(
        file,
        (await kubectl(['config', 'view', '--raw', '--minify', '-o', 'json'])).replace(
          /"token": "[^"]*"/,
          `"token": "${token}"`,
        ),
        { mode: 0o600 },
      );
      client = await loadKubeClient(file, {});
    }, 180_000);

    afterAll(async () => {
      await cp?.stop();
    });

    it("without the policy, node A's token labels node B: RBAC alone allows it (the negative control)", async () => {
      const changed = await new NodeLabeler(client, 'node-b', log).apply({ [CAPABLE]: 'true' });
      expect(changed).toEqual([CAPABLE]);
      expect((await labels('node-b'))[CAPABLE]).toBe('true');
      await kubectl(['label', 'node', 'node-b', `${CAPABLE}-`]);
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
  },
);
