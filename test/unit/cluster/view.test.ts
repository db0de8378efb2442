// The cluster view's reading of Nodes: what NodeFacts keep, and how little each costs at 20,000
// nodes (#72: the labels map is a fast-mode object, not a hash table).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { nodeFacts, sameFacts, StringPool } from '../../../src/cluster/view.js';
import { stringMap } from '../../../src/util/json.js';
import { ackNode } from '../../harness/k8s/nodes.js';

describe('stringMap', () => {
  it('keeps string values only, as own keys of an object with no prototype', () => {
    const m = stringMap(JSON.parse('{"a":"1","b":2,"__proto__":"p","c":null}'));
    expect(Object.getPrototypeOf(m)).toBeNull();
    expect(Object.keys(m)).toEqual(['a', '__proto__']);
    expect(m['__proto__']).toBe('p');
    expect(m['toString']).toBeUndefined();
    expect(m['constructor']).toBeUndefined();
  });

  it('reads anything that is not an object as an empty map', () => {
    for (const v of [undefined, null, 'x', 3, ['a']]) expect(Object.keys(stringMap(v))).toEqual([]);
  });

  it('passes each kept value through the given function', () => {
    expect({ ...stringMap({ a: 'x', b: 'y' }, (s) => s.toUpperCase()) }).toEqual({
      a: 'X',
      b: 'Y',
    });
  });

  // V8 keeps a hash table for an object filled key by key after Object.create(null): 1,640 bytes
  // for an ACK node's 22 labels, against 226 for a fast-mode one (measured in #72). Only V8's own
  // %HasFastProperties can say which it is, so this asks a child Node with natives syntax on.
  it("makes a fast-mode object of an ACK node's 22 labels, sharing one hidden class", () => {
    const script = `
      import { stringMap } from './src/util/json.ts';
      import { ackNode } from './test/harness/k8s/nodes.ts';
      const a = stringMap(JSON.parse(JSON.stringify(ackNode(1))).metadata.labels);
      const b = stringMap(JSON.parse(JSON.stringify(ackNode(5))).metadata.labels);
      console.log(JSON.stringify([Object.keys(a).length, %HasFastProperties(a), %HaveSameMap(a, b)]));`;
    const out = execFileSync(
      process.execPath,
      ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script],
      { encoding: 'utf8' },
    );
    expect(JSON.parse(out)).toEqual([22, true, true]);
  });
});

describe('nodeFacts', () => {
  it("keeps a Node's name, labels, kernel, OS image and IPv4 pod ranges, and nothing else", () => {
    const f = nodeFacts(ackNode(8))!;
    expect(f.name).toBe('cn-hangzhou.192.168.0.8-8');
    expect(f.kernelVersion).toBe('5.10.134-17.3.al8.x86_64');
    expect(f.osImage).toMatch(/^Alibaba Cloud Linux 3/);
    expect(f.labels['smcr.erdma.io/capable']).toBe('true');
    expect(f.podCIDRs?.length).toBeGreaterThan(0);
    expect(Object.keys(f).sort()).toEqual([
      'kernelVersion',
      'labels',
      'name',
      'osImage',
      'podCIDRs',
    ]);
  });

  it('reads spec.podCIDRs as canonical IPv4 ranges, IPv6 ones left out, and the old podCIDR too', () => {
    const node = (spec: object): unknown => ({ metadata: { name: 'n' }, spec });
    expect(nodeFacts(node({ podCIDRs: ['10.244.1.7/24', 'fd00:1::/64'] }))!.podCIDRs).toEqual([
      '10.244.1.0/24',
    ]);
    expect(nodeFacts(node({ podCIDR: '10.244.2.0/24' }))!.podCIDRs).toEqual(['10.244.2.0/24']);
    expect(nodeFacts(node({ podCIDRs: ['fd00:1::/64'] }))!.podCIDRs).toBeUndefined();
    const a = nodeFacts(node({ podCIDRs: ['10.244.1.0/24'] }))!;
    const b = nodeFacts(node({ podCIDRs: ['10.244.9.0/24'] }))!;
    expect(sameFacts(a, b)).toBe(false);
  });

  it('reads no facts from what is not a named Node', () => {
    for (const v of [null, {}, { metadata: {} }, { metadata: { name: 7 } }, 'node'])
      expect(nodeFacts(v)).toBeUndefined();
  });

  it('gives a status update the same facts, and a label change different ones', () => {
    const pool = new StringPool();
    const node = ackNode(3) as { metadata: { labels: Record<string, string> }; status: object };
    const first = nodeFacts(node, pool)!;
    const update = structuredClone(node);
    update.status = { ...update.status, conditions: [] };
    expect(sameFacts(first, nodeFacts(update, pool)!)).toBe(true);
    update.metadata.labels['smcr.erdma.io/capable'] = 'true';
    expect(sameFacts(first, nodeFacts(update, pool)!)).toBe(false);
    delete update.metadata.labels['smcr.erdma.io/capable'];
    expect(sameFacts(first, nodeFacts(update, pool)!)).toBe(false);
  });
});
