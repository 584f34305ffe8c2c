// The body checks themselves, on inputs no HTTP body can carry past the parser (deeper than the limit):
// both walks are iterative, so they answer instead of overflowing the stack.
import { describe, expect, it } from 'vitest';
import { containsNul, jsonDepthExceeds, MAX_JSON_DEPTH } from '../../src/api/body-limits.js';

function deep(depth: number, leaf: unknown): unknown {
  let value: unknown = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

describe('body limits', () => {
  it('finds a NUL at any depth, in values and in keys', () => {
    expect(containsNul(deep(100_000, 'a\u0000b'))).toBe(true);
    expect(containsNul(deep(100_000, { 'k\u0000': 1 }))).toBe(true);
    expect(containsNul(deep(100_000, 'ab'))).toBe(false);
    expect(containsNul(Array.from({ length: 200_000 }, () => 'x'))).toBe(false);
  });

  it('measures depth on the text, ignoring brackets in strings and escaped quotes', () => {
    expect(jsonDepthExceeds(`${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`)).toBe(false);
    expect(jsonDepthExceeds(`${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`)).toBe(true);
    expect(jsonDepthExceeds(JSON.stringify({ a: '['.repeat(500), b: '"{{{{\\' }))).toBe(false);
    expect(jsonDepthExceeds(`{"a":"\\"${'['.repeat(40)}"}`)).toBe(false);
    expect(jsonDepthExceeds('['.repeat(1_000_000))).toBe(true);
  });
});
