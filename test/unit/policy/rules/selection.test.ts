// The selection rule (src/policy/rules/selection.ts) and the selection it resolves (src/policy/selection.ts).
import { describe, expect, it } from 'vitest';
import { NODE_LABELS, SETTINGS_ANNOTATION } from '../../../../src/constants.js';
import { evaluate } from '../../../../src/policy/evaluate.js';
import {
  parsePorts,
  PRIVATE_NETWORKS,
  selectionNetworks,
} from '../../../../src/policy/selection.js';
import type { JsonObject } from '../../../../src/policy/types.js';
import { config, GOOD_KERNEL, node, pod, unknownView, view } from '../../../helpers/policy.js';
import { viewFromProfile } from '../../../../src/cluster/profile.js';
import { nodeFacts } from '../../../../src/cluster/view.js';

const annotated = (annotations: Record<string, string>): JsonObject => pod({ annotations });

function selectOf(obj: JsonObject, v = unknownView): string | undefined {
  const r = evaluate(obj, v, config);
  const meta = r.mutated?.metadata as { annotations: Record<string, string> } | undefined;
  const doc = JSON.parse(meta?.annotations[SETTINGS_ANNOTATION] ?? '{}') as { select?: string };
  return doc.select;
}

describe('rule selection', () => {
  it.each([
    ['smcr.erdma.io/connect-ports', '9000-8000', /not a port .* N ≤ M/],
    ['smcr.erdma.io/connect-ports', '0', /not a port/],
    ['smcr.erdma.io/listen-ports', '65536', /not a port/],
    ['smcr.erdma.io/listen-ports', 'http', /not a port/],
    ['smcr.erdma.io/connect-ports', '', /must be "\*" or a list/],
    // What is wrong with the list, not '"" is not a port' (#102).
    ['smcr.erdma.io/listen-ports', '6379,', /an empty item in "6379," \(a comma at an end/],
    ['smcr.erdma.io/listen-ports', '6379,,6380', /an empty item/],
    ['smcr.erdma.io/connect-ports', '*,6379', /"\*" means every port and stands alone/],
    [
      'smcr.erdma.io/connect-ports',
      Array.from({ length: 17 }, (_, i) => i + 1).join(','),
      /at most 16/,
    ],
  ])('denies %s=%s, saying how to write it', (key, value, message) => {
    const r = evaluate(annotated({ [key]: value }), unknownView, config);
    expect(r.allowed).toBe(false);
    expect(r.denials).toHaveLength(1);
    expect(r.denials[0]).toMatchObject({ rule: 'selection', path: `metadata.annotations[${key}]` });
    expect(r.denials[0]?.message).toMatch(message);
  });

  it('writes the pod ports and the cluster networks into the settings the plugin reads', () => {
    const v = viewFromProfile({
      podNetworks: ['10.1.0.0/16'],
      serviceNetworks: ['192.168.0.0/20'],
    });
    expect(
      selectOf(
        annotated({
          'smcr.erdma.io/connect-ports': '6379, 8000-8999, !8080',
          'smcr.erdma.io/listen-ports': '6379',
        }),
        v,
      ),
    ).toBe('nets=10.1.0.0/16,192.168.0.0/20;connect=6379,8000-8999,!8080;listen=6379');
  });

  it('by default selects every port inside the private ranges when the cluster names no network', () => {
    expect(selectOf(annotated({}))).toBe(`nets=${PRIVATE_NETWORKS.join(',')};connect=*;listen=*`);
  });

  it("never falls back to Alibaba Cloud's service range: the metadata server and DNS stay TCP (#100)", () => {
    const toInt = (ip: string): number => ip.split('.').reduce((a, o) => a * 256 + Number(o), 0);
    const inside = (ip: string): boolean =>
      PRIVATE_NETWORKS.some((c) => {
        const [a = '', bits = '32'] = c.split('/');
        const size = 2 ** (32 - Number(bits));
        return Math.floor(toInt(ip) / size) === Math.floor(toInt(a) / size);
      });
    for (const ip of ['100.100.100.200', '100.100.2.136', '100.100.0.1', '100.100.255.254'])
      expect(inside(ip), ip).toBe(false);
    for (const ip of ['100.64.0.1', '100.99.255.254', '100.101.0.1', '100.127.255.254', '10.1.2.3'])
      expect(inside(ip), ip).toBe(true);
    // The rest of RFC 6598's range, exactly: 2^22 addresses less 2^16, no overlap.
    const shared = PRIVATE_NETWORKS.filter((c) => c.startsWith('100.')).map(
      (c) => 2 ** (32 - Number(c.split('/')[1])),
    );
    expect(shared.reduce((a, b) => a + b, 0)).toBe(2 ** 22 - 2 ** 16);
  });

  it("takes the Nodes' podCIDRs, and widens them when there are more than the plugin holds", () => {
    const nodes = (n: number): ReturnType<typeof view> =>
      view(
        Array.from({ length: n }, (_, i) =>
          nodeFacts({
            metadata: { name: `n${i}` },
            spec: { podCIDRs: [`10.${100 + (i >> 8)}.${i & 255}.0/24`] },
          })!,
        ),
      );
    expect(selectionNetworks(nodes(3))).toEqual([
      '10.100.0.0/24',
      '10.100.1.0/24',
      '10.100.2.0/24',
    ]);
    // 300 node ranges in two /16s: the /16s.
    expect(selectionNetworks(nodes(300))).toEqual(['10.100.0.0/16', '10.101.0.0/16']);
  });

  it("takes the pod networks a Terway node's agent published, and the ServiceCIDRs, over the fallback (#100)", () => {
    const terway = nodeFacts({
      metadata: {
        name: 'terway-a',
        annotations: { 'smcr.erdma.io/pod-networks': '10.0.64.0/18, 10.0.128.9/18,not-a-cidr' },
      },
    })!;
    expect(terway.podCIDRs).toEqual(['10.0.64.0/18', '10.0.128.0/18']);
    const v = viewFromProfile({}, [terway], ['192.168.0.0/16']);
    expect(selectionNetworks(v)).toEqual(['10.0.128.0/18', '10.0.64.0/18', '192.168.0.0/16']);
    // A source that names a range holding Alibaba Cloud's service range has it cut out.
    const wide = viewFromProfile({ podNetworks: ['100.64.0.0/10'] }, [terway]);
    expect(selectionNetworks(wide)).not.toContain('100.64.0.0/10');
    expect(selectionNetworks(wide)).toEqual(
      expect.arrayContaining(['100.64.0.0/11', '100.101.0.0/16', '100.112.0.0/12']),
    );
    expect(selectionNetworks(wide).some((c) => c.startsWith('100.100.'))).toBe(false);
  });

  it('warns every SMC-R pod, ports named or not, when a node it may land on cannot keep its selection (#100)', () => {
    const labels = (mechanism: string, selection: string): Record<string, string> => ({
      [NODE_LABELS.capable]: 'true',
      [NODE_LABELS.mechanism]: mechanism,
      [NODE_LABELS.selection]: selection,
    });
    const v = view([
      node('alinux3', GOOD_KERNEL, labels('tcp2smc', 'none')),
      node('upstream', '6.12.117+deb13-amd64', labels('bpf', 'enforced'), 'Debian 13'),
    ]);
    const named = evaluate(annotated({ 'smcr.erdma.io/connect-ports': '6379' }), v, config);
    expect(named.allowed).toBe(true);
    expect(named.warnings.map((w) => w.message).join('\n')).toMatch(
      /1 capable node\(s\) this pod may land on, with mechanism tcp2smc, cannot keep its SMC selection: .*whatever smcr\.erdma\.io\/connect-ports/,
    );
    // A pod that names none is told too: its default selection keeps the Internet on TCP, which
    // tcp2smc does not (before #100 it was told nothing).
    const unnamed = evaluate(annotated({}), v, config);
    expect(unnamed.warnings.find((w) => w.rule === 'selection')?.message).toMatch(
      /with mechanism tcp2smc, cannot keep its SMC selection: .*outside the cluster's networks too \(Internet servers/,
    );
    // Only the nodes it may land on: kept to the enforcing one by its nodeSelector, it is not told.
    const kept = annotated({});
    (kept.spec as Record<string, unknown>).nodeSelector = { 'kubernetes.io/hostname': 'upstream' };
    const keptLabels = view([
      node('alinux3', GOOD_KERNEL, {
        ...labels('tcp2smc', 'none'),
        'kubernetes.io/hostname': 'alinux3',
      }),
      node(
        'upstream',
        '6.12.117+deb13-amd64',
        { ...labels('bpf', 'enforced'), 'kubernetes.io/hostname': 'upstream' },
        'Debian 13',
      ),
    ]);
    expect(evaluate(kept, keptLabels, config).warnings.map((w) => w.rule)).not.toContain(
      'selection',
    );
  });

  it('writes the ports in the canonical text the C side reads (native/test/unit.c: selection_port)', () => {
    expect(parsePorts(' 6379 , !6380 ').text).toBe('6379,!6380');
  });
});
