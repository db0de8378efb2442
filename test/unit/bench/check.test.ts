// The CLI start-up row of `npm run bench check` (bench/check.ts) times bare `node` and `--version`
// in turns, so that a machine whose speed drifts between two blocks of runs moves both alike.
import { describe, expect, it } from 'vitest';
import { interleavedBest } from '../../../bench/check.js';

/** Spins for `ms` of wall-clock time: a command whose duration the test chooses. */
const busy = (ms: number) => () => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe('interleavedBest', () => {
  it('runs the commands in turns, round after round', () => {
    const order: string[] = [];
    interleavedBest(3, [() => order.push('a'), () => order.push('b')]);
    expect(order.join('')).toBe('ababab');
  });

  it("keeps each command's best time, not its first or last", () => {
    let n = 0;
    const [slowThenFast = NaN, steady = NaN] = interleavedBest(3, [
      () => busy(n++ === 1 ? 2 : 50)(),
      busy(5),
    ]);
    expect(slowThenFast).toBeGreaterThanOrEqual(2);
    expect(slowThenFast).toBeLessThan(25); // the second round's 2 ms, not the others' 50
    expect(steady).toBeGreaterThanOrEqual(5);
  });
});
