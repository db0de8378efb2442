// patchOfCopy must give what fast-json-patch's compare() gives for a copy-on-descend copy (same
// operations, same order, same JSON). fast-json-patch stays the oracle: this property is what
// lets the policy skip the general diff.
import fastJsonPatch from 'fast-json-patch';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodePatch } from '../../../src/admission/review.js';
import { patchJson, patchOfCopy, sharedConstant } from '../../../src/policy/patch.js';
import type { PatchOperation } from '../../../src/policy/types.js';

type Json = unknown;
type Container = Record<string, Json> | Json[];

function isContainer(v: Json): v is Container {
  return typeof v === 'object' && v !== null;
}

/** One copy-on-descend edit: descend by `steps` (copying each container), then act at the end. */
interface Edit {
  readonly steps: readonly number[];
  readonly action: 'set' | 'add' | 'delete' | 'push' | 'retype';
  readonly key: string;
  readonly value: Json;
}

function copyOf(v: Container): Container {
  return Array.isArray(v) ? [...v] : { ...v };
}

/** Applies an edit to `root` (already a fresh copy), copying every container it descends into. */
function applyEdit(root: Container, edit: Edit): void {
  let node = root;
  for (const step of edit.steps) {
    const keys = Object.keys(node).filter((k) => isContainer((node as Record<string, Json>)[k]));
    if (keys.length === 0) break;
    const key = keys[step % keys.length]!;
    const next = copyOf((node as Record<string, Json>)[key] as Container);
    (node as Record<string, Json>)[key] = next;
    node = next;
  }
  const keys = Object.keys(node);
  const existing = keys.length > 0 ? keys[edit.key.length % keys.length]! : undefined;
  const fresh = structuredClone(edit.value);
  if (Array.isArray(node)) {
    if (edit.action === 'push' || existing === undefined) node.push(fresh);
    else if (edit.action === 'delete') node.pop();
    else node[Number(existing)] = fresh;
    return;
  }
  if (edit.action === 'add') node[edit.key] = fresh;
  else if (existing === undefined) node[edit.key] = fresh;
  else if (edit.action === 'delete') delete node[existing];
  else if (edit.action === 'retype')
    node[existing] = Array.isArray(node[existing]) ? { moved: fresh } : [fresh];
  else node[existing] = fresh;
}

const keyArb = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('spec', 'a/b', 'x~y', '~1', '0', '__proto__'),
);
const valueArb = fc.jsonValue({ maxDepth: 3 });
const docArb = fc.dictionary(keyArb, valueArb, { maxKeys: 6 });
const editArb: fc.Arbitrary<Edit> = fc.record({
  steps: fc.array(fc.nat(), { maxLength: 4 }),
  action: fc.constantFrom('set', 'add', 'delete', 'push', 'retype'),
  key: keyArb,
  value: valueArb,
});

describe('patchOfCopy', () => {
  it('gives exactly the operations compare() gives, in its order, for any copy-on-descend copy', () => {
    fc.assert(
      fc.property(docArb, fc.array(editArb, { maxLength: 5 }), (doc, edits) => {
        const before = JSON.stringify(doc);
        const copy = { ...doc } as Record<string, Json>;
        for (const edit of edits) applyEdit(copy, edit);
        const ours = patchOfCopy(doc, copy);
        expect(JSON.stringify(ours)).toBe(JSON.stringify(fastJsonPatch.compare(doc, copy)));
        expect(patchJson(ours)).toBe(JSON.stringify(ours));
        expect(JSON.stringify(doc)).toBe(before); // the original is never touched
        const applied = fastJsonPatch.applyPatch(
          JSON.parse(before),
          JSON.parse(JSON.stringify(ours)),
          false,
          true,
          false,
        ).newDocument;
        expect(applied).toEqual(JSON.parse(JSON.stringify(copy)));
      }),
      { numRuns: 2000, seed: 2511 },
    );
  });

  it('is empty for an unchanged object and for a copy that changed nothing', () => {
    const doc = { metadata: { annotations: { a: 'b' } }, spec: { containers: [{ name: 'c' }] } };
    expect(patchOfCopy(doc, doc)).toEqual([]);
    expect(patchOfCopy(doc, { ...doc, spec: { ...doc.spec } })).toEqual([]);
  });

  it('escapes "/" and "~" in keys as RFC 6901 says', () => {
    const doc = { metadata: { annotations: { 'smcr.erdma.io/settings': 'x', 'a~b': '1' } } };
    const copy = { metadata: { annotations: { 'smcr.erdma.io/settings': 'y', 'a~b': '2' } } };
    expect(patchOfCopy(doc, copy)).toEqual([
      { op: 'replace', path: '/metadata/annotations/a~0b', value: '2' },
      { op: 'replace', path: '/metadata/annotations/smcr.erdma.io~1settings', value: 'y' },
    ]);
  });
});

describe('patchJson and encodePatch', () => {
  const decoded = (ops: readonly PatchOperation[]): string =>
    Buffer.from(encodePatch(ops).base64, 'base64').toString('utf8');

  it('serialise any operations exactly as JSON.stringify, and encode their UTF-8 in base64', () => {
    // Any UTF-16, lone surrogates and control characters included: all of it must come out as JSON.stringify has it.
    const text = fc.string({ unit: 'binary', maxLength: 12 });
    const value = fc.oneof(text, fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }));
    const opArb: fc.Arbitrary<PatchOperation> = fc.oneof(
      fc.record({ op: fc.constant('add' as const), path: text, value }),
      fc.record({ op: fc.constant('replace' as const), path: text, value }),
      fc.record({ op: fc.constant('remove' as const), path: text }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 6 }), (ops) => {
        const json = JSON.stringify(ops);
        expect(patchJson(ops)).toBe(json);
        // Twice: the second time string values come from the cache of their JSON.
        expect(patchJson(ops)).toBe(json);
        expect(decoded(ops)).toBe(json);
        expect(encodePatch(ops).bytes).toBe(Buffer.byteLength(json));
      }),
      { numRuns: 1000, seed: 2512 },
    );
  });

  it('encode non-ASCII text as UTF-8, not as the Latin-1 btoa would take it', () => {
    const ops: PatchOperation[] = [
      { op: 'add', path: '/metadata/annotations/note', value: 'café ☕ 𝄞' },
    ];
    const json = JSON.stringify(ops);
    expect(decoded(ops)).toBe(json);
    expect(encodePatch(ops).bytes).toBe(Buffer.byteLength(json));
    expect(encodePatch(ops).bytes).toBeGreaterThan(json.length);
  });

  it('omit an undefined value, as JSON.stringify does', () => {
    expect(patchJson([{ op: 'add', path: '/a', value: undefined }])).toBe(
      '[{"op":"add","path":"/a"}]',
    );
  });

  it('serialise a shared constant from its JSON computed once, and the constant cannot be changed', () => {
    const constant = sharedConstant({ a: { b: ['c', { d: 1 }] } });
    expect(patchJson([{ op: 'add', path: '/x', value: constant }])).toBe(
      JSON.stringify([{ op: 'add', path: '/x', value: constant }]),
    );
    expect(Object.isFrozen(constant.a.b[1])).toBe(true);
    expect(() => {
      (constant.a.b as unknown[]).push('e');
    }).toThrow(TypeError);
  });
});
