// The one place values are quoted back in messages (src/base/errors.ts): bounded, and URLs without their userinfo.
import { describe, expect, it } from 'vitest';
import { clip, QUOTE_LIMIT, quote, quoteUrl, redactUrl } from '../../src/base/errors.js';

describe('quote', () => {
  it('is JSON text for short values', () => {
    expect(quote('a"b\n')).toBe('"a\\"b\\n"');
    expect(quote(5)).toBe('5');
    expect(quote({ a: [1] })).toBe('{"a":[1]}');
    expect(quote(undefined)).toBe('undefined');
  });

  it('keeps at most QUOTE_LIMIT characters of a long value and says how long it was', () => {
    const quoted = quote('x'.repeat(100_000));
    expect(quoted).toBe(`"${'x'.repeat(QUOTE_LIMIT)}…" (100000 characters)`);
    expect(quote({ big: 'y'.repeat(100_000) }).length).toBeLessThan(QUOTE_LIMIT + 40);
    // A surrogate pair is never split.
    expect(quote(`${'x'.repeat(QUOTE_LIMIT - 1)}\u{1f600}tail`)).toBe(
      `"${'x'.repeat(QUOTE_LIMIT - 1)}…" (${QUOTE_LIMIT + 5} characters)`,
    );
    expect(clip('z'.repeat(300))).toBe(`${'z'.repeat(QUOTE_LIMIT)}… (300 characters)`);
  });
});

describe('redactUrl / quoteUrl', () => {
  it.each([
    ['https://user:pw@host:6443/path', 'https://***@host:6443/path'],
    ['https://user@host', 'https://***@host/'],
    ['http://user:p%40ss@host', 'http://***@host/'],
    ['https://user:pw x@host', 'https://***@host/'],
    ['https://user:pw/x@host', 'https://***@host'],
    ['https://user:pw@host:99999', 'https://***@host:99999'],
    ['user:pw@host', '***@host'],
    ['https://host:6443', 'https://host:6443'],
    ['not a url', 'not a url'],
  ])('%s → %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
    expect(quoteUrl(url)).toBe(JSON.stringify(expected));
  });
});
