import { describe, expect, it } from 'vitest';
import { isCanonicalBool, parseGoBool } from '../../../src/policy/parse-bool.js';

describe('parseGoBool (Go strconv.ParseBool)', () => {
  it.each([
    ['1', true],
    ['t', true],
    ['T', true],
    ['TRUE', true],
    ['true', true],
    ['True', true],
    ['0', false],
    ['f', false],
    ['F', false],
    ['FALSE', false],
    ['false', false],
    ['False', false],
  ])('reads %j as %s', (input, expected) => {
    expect(parseGoBool(input)).toBe(expected);
  });

  it.each(['', 'yes', 'no', 'tRUE', ' true', 'true ', 'on', '2', 'y', 'TrUe'])(
    'rejects %j as Go does',
    (input) => {
      expect(parseGoBool(input)).toBeUndefined();
    },
  );

  it('treats only "true" and "false" as canonical', () => {
    expect(isCanonicalBool('true')).toBe(true);
    expect(isCanonicalBool('false')).toBe(true);
    expect(isCanonicalBool('True')).toBe(false);
    expect(isCanonicalBool('1')).toBe(false);
  });
});
