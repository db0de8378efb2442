// The driver-mode rule (src/policy/rules/driver-mode.ts).
import { describe, expect, it } from 'vitest';
import { evaluate } from '../../../../src/policy/evaluate.js';
import type { ClusterView, JsonObject } from '../../../../src/policy/types.js';
import { config, pod, unknownView, view } from '../../../helpers/policy.js';
import { NodeIndex } from '../../../../src/policy/nodes.js';

function rulesOf(obj: JsonObject, v: ClusterView = unknownView): string[] {
  return evaluate(obj, v, config).denials.map((d) => d.rule);
}

describe('rule driver-mode', () => {
  it.each(['ofed', 'compat'] as const)(
    'denies SMC-R when the cluster driver mode is %s',
    (mode) => {
      const r = evaluate(pod(), view(undefined, { driverMode: mode }), config);
      expect(r.denials[0]?.rule).toBe('driver-mode');
      expect(r.denials[0]?.message).toContain(`"${mode}"`);
    },
  );

  it('skips the check when the driver mode is unknown', () => {
    expect(rulesOf(pod(), { nodesKnown: false, nodes: new NodeIndex() })).toEqual([]);
  });
});
