// shapeWarnings keeps warnings within what the API server shows (no "warning:" prefix, no blanks
// or duplicates, at most MAX_WARNINGS of under MAX_WARNING_LENGTH characters). A lone warning
// takes a shortcut; it must shape exactly as the general path does.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_WARNING_LENGTH,
  MAX_WARNINGS,
  shapeWarnings,
} from '../../../src/admission/decision.js';

const warning = fc.oneof(
  fc.string(),
  fc.string({ minLength: MAX_WARNING_LENGTH - 3, maxLength: MAX_WARNING_LENGTH + 3 }),
  fc
    .tuple(
      fc.constantFrom('warning: ', 'Warning:', ' warning:  ', ' ', '\t', ''),
      fc.string(),
      fc.constantFrom('', ' ', '\n'),
    )
    .map((p) => p.join('')),
);

describe('shapeWarnings', () => {
  it('shapes a lone warning as the general path does (the same warning twice is deduplicated to it)', () => {
    fc.assert(
      fc.property(warning, (w) => {
        expect(shapeWarnings([w])).toEqual(shapeWarnings([w, w]));
      }),
      { numRuns: 2000 },
    );
  });

  it('drops a leading "warning:", blanks and duplicates, clips long ones, and keeps at most MAX_WARNINGS', () => {
    expect(shapeWarnings(['warning: a', 'a', '  ', 'b'])).toEqual(['a', 'b']);
    const long = 'x'.repeat(MAX_WARNING_LENGTH + 10);
    expect(shapeWarnings([long])).toEqual([`${'x'.repeat(MAX_WARNING_LENGTH - 4)}...`]);
    expect(shapeWarnings(Array.from({ length: 20 }, (_, i) => `w${i}`))).toHaveLength(MAX_WARNINGS);
    fc.assert(
      fc.property(fc.array(warning, { maxLength: 15 }), (ws) => {
        const out = shapeWarnings(ws);
        expect(out.length).toBeLessThanOrEqual(MAX_WARNINGS);
        expect(new Set(out).size).toBe(out.length);
        for (const w of out) {
          expect(w.length).toBeLessThanOrEqual(MAX_WARNING_LENGTH);
          expect(w).not.toBe('');
        }
      }),
    );
  });
});
