// The reserved-ports rule (src/policy/rules/reserved-ports.ts), from the labels the agent writes.
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../../src/policy/evaluate.js';
import { NodeIndex } from '../../../../src/policy/nodes.js';
import { config, node, pod, view } from '../../../helpers/policy.js';

const CAPABLE = { 'smcr.erdma.io/capable': 'true' };
const compat = (name: string): ReturnType<typeof node> =>
  node(name, undefined, { ...CAPABLE, 'smcr.erdma.io/erdma-reserved-ports': '30608-30623' });

const serving = (port: number, probePort = 8080): Record<string, unknown> => ({
  spec: {
    containers: [
      {
        name: 'app',
        image: 'app',
        ports: [{ containerPort: port }],
        readinessProbe: { tcpSocket: { port: probePort } },
      },
    ],
  },
});

describe('rule reserved-ports', () => {
  it("warns about a containerPort inside erdma's reserved range, naming the driver setting", () => {
    const r = evaluate(pod(serving(30610)), view([compat('n1'), compat('n2')]), config);
    expect(r.allowed).toBe(true);
    const w = r.warnings.filter((x) => /reserve/.test(x.message));
    expect(w).toEqual([
      {
        rule: 'reserved-ports',
        message: expect.stringMatching(
          /spec\.containers\[0\]\.ports\[0\]\.containerPort is 30610, inside 30608-30623, which 2 node\(s\) reserve .*reserve_ports_base/,
        ),
      },
    ]);
  });

  it("warns about a probe's port and smc's own range (rsvd_ports_base)", () => {
    const smc = node('n3', undefined, {
      ...CAPABLE,
      'smcr.erdma.io/smc-reserved-ports': '40000-40015',
    });
    const r = evaluate(pod(serving(8080, 40015)), view([smc]), config);
    expect(r.warnings.map((x) => x.message).join()).toMatch(
      /readinessProbe\.tcpSocket\.port is 40015.*rsvd_ports_base/,
    );
  });

  it('says nothing for ports outside the ranges, or where no node reserves any', () => {
    const r1 = evaluate(pod(serving(30607, 30624)), view([compat('n1')]), config);
    expect(r1.warnings.filter((x) => /reserve/.test(x.message))).toEqual([]);
    const r2 = evaluate(pod(serving(30610)), view([node('n4', undefined, CAPABLE)]), config);
    expect(r2.warnings.filter((x) => /reserve/.test(x.message))).toEqual([]);
  });

  it('counts the ranges as nodes come and go, in place', () => {
    const idx = new NodeIndex([compat('n1'), compat('n2')]);
    expect([...idx.reservedPorts]).toEqual([['smcr.erdma.io/erdma-reserved-ports=30608-30623', 2]]);
    idx.remove('n1');
    idx.upsert(node('n2', undefined, CAPABLE));
    expect(idx.reservedPorts.size).toBe(0);
  });
});
