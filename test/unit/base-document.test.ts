import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  parseDocument,
  readDocumentFile,
  readDocumentText,
  type ParseDocumentOptions,
} from '../../src/base/document.js';

const base: ParseDocumentOptions = { source: 'doc.yaml', code: 'ERR_PROFILE_PARSE' };

function failure(run: () => unknown): { code: string; message: string; path?: string; hint?: string } {
  try {
    run();
  } catch (error) {
    return error as { code: string; message: string; path?: string };
  }
  throw new Error('expected an error');
}

async function asyncFailure(
  run: () => Promise<unknown>,
): Promise<{ code: string; message: string; path?: string; hint?: string }> {
  try {
    await run();
  } catch (error) {
    return error as { code: string; message: string; path?: string };
  }
  throw new Error('expected an error');
}

describe('parseDocument: what a YAML document means', () => {
  it('YAML 1.2 core schema: yes/no/on stay strings, hex and floats are numbers, keys are strings, 1.1 tags unresolved', () => {
    expect(parseDocument('a: yes\nb: off\nc: 0x10\nd: 1e3\ne: ~\n1: one\ntrue: t\nf: !!binary aGk=\n', base)).toEqual({
      a: 'yes',
      b: 'off',
      c: 16,
      d: 1000,
      e: null,
      '1': 'one',
      true: 't',
      f: 'aGk=',
    });
  });

  it('a few aliases are fine; `<<` is a plain key (no merge)', () => {
    expect(parseDocument('a: &x [1, 2]\nb: *x\n<<: {c: 3}\n', base)).toEqual({ a: [1, 2], b: [1, 2], '<<': { c: 3 } });
  });

  it('an empty document is null; a stray --- at the end is no second document', () => {
    expect(parseDocument('', base)).toBeNull();
    expect(parseDocument('# only a comment\n', base)).toBeNull();
    expect(parseDocument('a: 1\n---\n', base)).toEqual({ a: 1 });
  });

  it('a stream of documents only when asked', () => {
    const stream = 'a: 1\n---\nb: 2\n';
    const error = failure(() => parseDocument(stream, base));
    expect(error).toMatchObject({ code: 'ERR_PROFILE_PARSE', path: 'doc.yaml' });
    expect(error.message).toBe(
      'doc.yaml is not valid YAML: a stream of 2 documents where one is expected (the second starts at line 2, column 1)',
    );
    expect(parseDocument(stream, { ...base, multiple: true })).toEqual([{ a: 1 }, { b: 2 }]);
    expect(parseDocument('{"a": 1}', { ...base, multiple: true })).toEqual([{ a: 1 }]);
  });
});

describe("parseDocument: refused, with the caller's code, the source as path, a position, nothing quoted", () => {
  const secret = 's3cr3t-T0ken-Value';

  it.each([
    ['a duplicate key', `token: ${secret}\ntoken: other\n`, 'a duplicate key at line 2, column 1'],
    [
      'an alias bomb',
      [
        'a: &a [x, x, x, x, x, x, x, x, x]',
        ...'bcdefgh'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(', ')}]`),
        '',
      ].join('\n'),
      'its aliases expand to more than 100 nodes (an alias bomb?)',
    ],
    ['an alias of nothing', `token: *${secret}\n`, 'an alias of an anchor that is not defined before it'],
    ['an invalid escape', `token: "${secret}\\q"\n`, 'an invalid escape in a double-quoted string at line 1, column'],
    ['a collection as a key', `? [${secret}]\n: 1\n`, 'a collection as a mapping key at line 1, column 3'],
    [
      'a block mapping in a plain scalar',
      `token: ${secret}: oops\n`,
      'a block collection as a key at line 1, column 8',
    ],
    ['deep nesting', `${'['.repeat(5000)}${secret}${']'.repeat(5000)}`, 'nesting too deep'],
  ])('%s', (_name, text, problem) => {
    const error = failure(() => parseDocument(text, { ...base, format: 'yaml' }));
    expect(error.code).toBe('ERR_PROFILE_PARSE');
    expect(error.path).toBe('doc.yaml');
    expect(error.message).toContain(`doc.yaml is not valid YAML: ${problem}`);
    expect(error.message).not.toContain(secret.slice(0, 6));
    expect(error).not.toHaveProperty('cause');
  });

  it("JSON: V8's excerpt of the text is dropped; a duplicate key (even spelled with escapes, in a nested object) is refused", () => {
    const syntax = failure(() => parseDocument(`{"token": ${secret}}`, { ...base, format: 'json' }));
    expect(syntax.message).toBe('doc.yaml is not valid JSON: an unexpected character: not valid JSON');
    expect(failure(() => parseDocument('{"a": 1,', { ...base, format: 'json' })).message).toMatch(
      /^doc\.yaml is not valid JSON: .*position 8/,
    );
    const text = `{"a": {"token": "${secret}", "t\\u006fken": "x"}}`;
    expect(failure(() => parseDocument(text, { ...base, format: 'json' })).message).toBe(
      `doc.yaml is not valid JSON: a duplicate key at line 1, column ${text.lastIndexOf('"t') + 1}`,
    );
    // The same key in sibling objects, keys that look alike, strings with quotes and brackets: all fine.
    expect(
      parseDocument('{"a": {"k": 1}, "b": {"k": "}\\"k\\": ["}, "c": [{"k": 1}, {"k": 2}]}', {
        ...base,
        format: 'json',
      }),
    ).toEqual({
      a: { k: 1 },
      b: { k: '}"k": [' },
      c: [{ k: 1 }, { k: 2 }],
    });
  });

  it('auto: text that starts like JSON is JSON, a YAML flow mapping still parses, and a broken one gets the JSON problem', () => {
    expect(parseDocument('{"a": [1]}', base)).toEqual({ a: [1] });
    expect(parseDocument('{a: 1}', base)).toEqual({ a: 1 });
    expect(parseDocument('kind: Tenant', base)).toEqual({ kind: 'Tenant' });
    expect(failure(() => parseDocument('{"a": [1}', base)).message).toMatch(/^doc\.yaml is not valid JSON: /);
    expect(failure(() => parseDocument('a: [1\n', base)).message).toMatch(/^doc\.yaml is not valid YAML: /);
  });

  it('size is bounded in bytes (UTF-8), before any parsing', () => {
    expect(parseDocument(`a: ${'é'.repeat(10)}`, { ...base, maxBytes: 23 })).toEqual({ a: 'é'.repeat(10) });
    expect(failure(() => parseDocument(`a: ${'é'.repeat(11)}`, { ...base, maxBytes: 23 })).message).toBe(
      'doc.yaml is not valid JSON or YAML: larger than 23 bytes',
    );
  });

  it("the caller's message and hint", () => {
    const error = failure(() =>
      parseDocument('a: 1\na: 2', { ...base, message: 'cannot parse the thing x.yaml', hint: 'fix it' }),
    );
    expect(error).toMatchObject({
      message: 'cannot parse the thing x.yaml: a duplicate key at line 2, column 1',
      hint: 'fix it',
      path: 'doc.yaml',
    });
  });
});

describe('readDocumentFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cpc-document-'));
  const options = { code: 'ERR_PROFILE_PARSE', readCode: 'ERR_PROFILE_READ' } as const;

  it('reads and parses a file, the file as source', async () => {
    const file = join(dir, 'ok.yaml');
    writeFileSync(file, 'a: 1\n');
    expect(await readDocumentFile(file, options)).toEqual({ a: 1 });
    writeFileSync(file, 'a: 1\na: 2\n');
    expect(await asyncFailure(() => readDocumentFile(file, options))).toMatchObject({
      code: 'ERR_PROFILE_PARSE',
      path: file,
    });
  });

  it('a directory, a missing file, a file over the bound: the read code, naming the file', async () => {
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    expect(await asyncFailure(() => readDocumentFile(sub, options))).toMatchObject({
      code: 'ERR_PROFILE_READ',
      path: sub,
      message: `cannot read ${sub}: it is a directory, not a file`,
    });
    const missing = join(dir, 'missing.yaml');
    expect(
      await asyncFailure(() =>
        readDocumentFile(missing, { ...options, readMessage: 'cannot read the profile', readHint: 'make one' }),
      ),
    ).toMatchObject({
      code: 'ERR_PROFILE_READ',
      path: missing,
      message: 'cannot read the profile: no such file',
      hint: 'make one',
    });
    const big = join(dir, 'big.yaml');
    writeFileSync(big, 'a: 1\n'.padEnd(100, ' '));
    expect(await asyncFailure(() => readDocumentFile(big, { ...options, maxBytes: 99 }))).toMatchObject({
      code: 'ERR_PROFILE_READ',
      message: `cannot read ${big}: EFBIG: ${big} is larger than 99 bytes`,
    });
  });

  it.runIf(process.platform === 'linux')('a device that never ends is read only up to the bound', async () => {
    await expect(readDocumentText('/dev/zero', 1000)).rejects.toMatchObject({ code: 'EFBIG' });
  });
});
