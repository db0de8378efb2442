// Run by bench/node-pods.ts's heldPerPod, as `node --expose-gc --import tsx bench/held-pods.ts LIST`:
// prints the V8 heap bytes per pod that holding LIST's pods takes, whole and as the agent keeps them.
import { readFileSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';
import { keptPod } from '../src/agent/pod.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const text = readFileSync(process.argv[2] ?? '', 'utf8');

/**
 * The list parsed and each pod kept, in a call of its own: the parsed list, a temporary of the
 * caller's frame, would live through the caller's collections (an interpreter register holds it),
 * and count as held whatever is kept.
 */
function parseAndKeep(keep: (pod: V1Pod) => unknown): unknown[] {
  return (JSON.parse(text) as { items: V1Pod[] }).items.map(keep);
}

/** Heap bytes per pod held after a full collection, the pods parsed from the list's text each time. */
function held(keep: (pod: V1Pod) => unknown): { pods: number; perPod: number } {
  gc!();
  gc!();
  const before = process.memoryUsage().heapUsed;
  const kept = parseAndKeep(keep);
  gc!();
  gc!();
  // `kept` is read after the collections, so that it lives through them.
  const perPod = (process.memoryUsage().heapUsed - before) / kept.length;
  return { pods: kept.length, perPod };
}

const whole = held((p) => p);
const kept = held(keptPod);
process.stdout.write(
  JSON.stringify({
    pods: whole.pods,
    whole: Math.round(whole.perPod),
    kept: Math.round(kept.perPod),
  }),
);
