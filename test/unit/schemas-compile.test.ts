import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
// @ts-expect-error -- a plain ESM build script without type declarations
import { generate, listSchemas } from '../../scripts/compile-schemas.mjs';
import { schemaIds } from '../../src/generated/validators.js';
import { validateDocument } from '../../src/schemas/index.js';
import { isRfc3339DateTime } from '../../src/schemas/formats.js';
import { deepEqual, findDuplicateListMapKey, ucs2length } from '../../src/schemas/runtime.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const temporary: string[] = [];

afterEach(() => {
  for (const dir of temporary.splice(0)) {
    rmSync(dir, { recursive: true, force: true });
  }
});

function schemaDir(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'cpc-schemas-'));
  temporary.push(dir);
  for (const [name, schema] of Object.entries(files)) {
    writeFileSync(join(dir, name), JSON.stringify(schema));
  }
  return dir;
}

describe('scripts/compile-schemas.mjs', () => {
  test('every schemas/*.schema.json is compiled, its file name being its SchemaId', () => {
    const files = readdirSync(`${root}schemas`)
      .filter((file) => file.endsWith('.schema.json'))
      .map((file) => file.slice(0, -'.schema.json'.length))
      .sort();
    expect([...schemaIds]).toEqual(files);
    for (const id of files) {
      expect(() => validateDocument(id as never, {})).not.toThrow();
    }
  });

  test('a new schema file is picked up with no change to the generator', () => {
    const dir = schemaDir({
      'tenant-thing.v1.schema.json': {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        required: ['issuedAt'],
        properties: { issuedAt: { type: 'string', format: 'date-time' }, 'x-extra': { type: 'integer' } },
        'x-custom-annotation': 'ignored',
      },
      'README.md': 'not a schema',
    });
    const source: string = generate(listSchemas(dir));
    expect(source).toContain('export type SchemaId = "tenant-thing.v1";');
    expect(source).toContain('"tenant-thing.v1": validate0,');
  });

  test('x-messages pointers match the schemaPath of the errors, whatever the property names', async () => {
    const dir = schemaDir({
      'odd.schema.json': {
        type: 'object',
        properties: { 'a b/c~d': { type: 'string', pattern: '^x$', 'x-messages': { pattern: 'must be x' } } },
      },
    });
    // Generated next to the real module so that its runtime import resolves; git-ignored like it.
    const file = `${root}src/generated/odd-${process.pid}.ts`;
    temporary.push(file);
    writeFileSync(file, generate(listSchemas(dir)));
    const module = await import(file);
    const validate = module.validators.odd;
    expect(validate({ 'a b/c~d': 'y' })).toBe(false);
    const pointer = validate.errors[0].schemaPath.replace(/\/pattern$/, '');
    expect(module.messages.odd[pointer]).toEqual({ pattern: 'must be x' });
  });

  test('the generated module loads nothing of ajv at run time', () => {
    const generated = readFileSync(`${root}src/generated/validators.ts`, 'utf8');
    expect(generated).not.toMatch(/require\(/);
    expect(generated.match(/^import .*$/gm)).toEqual([
      "import { deepEqual, findDuplicateListMapKey, formats, pushError, ucs2length } from '../schemas/runtime.js';",
      "import type { CompiledValidator } from '../schemas/runtime.js';",
    ]);
    // Documentation is left out of the generated code.
    expect(generated).not.toContain('"description"');
  });

  test('a schema with an unknown format fails the build, naming it', () => {
    const dir = schemaDir({ 'bad.schema.json': { type: 'string', format: 'no-such-format' } });
    expect(() => generate(listSchemas(dir))).toThrow(/unknown format "no-such-format"/);
  });
});

describe('runtime helpers of the generated validators', () => {
  test('ucs2length counts code points, as JSON Schema lengths do', () => {
    expect(ucs2length('')).toBe(0);
    expect(ucs2length('abc')).toBe(3);
    expect(ucs2length('😀x')).toBe(2);
    expect(ucs2length('\ud800')).toBe(1); // a lone surrogate is one
  });

  test('deepEqual compares JSON values', () => {
    expect(deepEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(deepEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(deepEqual([1], { 0: 1 })).toBe(false);
    expect(deepEqual(null, {})).toBe(false);
  });

  test('findDuplicateListMapKey finds the first repeated key tuple', () => {
    expect(findDuplicateListMapKey([{ name: 'a' }, { name: 'b' }, { name: 'a' }], ['name'])).toEqual([0, 2]);
    expect(
      findDuplicateListMapKey(
        [
          { a: 1, b: 1 },
          { a: 1, b: 2 },
        ],
        ['a', 'b'],
      ),
    ).toBeNull();
    expect(findDuplicateListMapKey(['x', 'x', null, null], ['name'])).toBeNull();
  });

  test.each([
    ['2026-11-22T10:00:00Z', true],
    ['2024-02-29T00:00:00+23:59', true],
    ['0000-01-01T00:00:00Z', true],
    ['2100-02-29T00:00:00Z', false],
    ['2000-02-29T00:00:00Z', true],
    ['2026-11-22T10:00:00-00:60', false],
    ['2026-13-01T00:00:00Z', false],
    ['2026-11-00T00:00:00Z', false],
  ])('date-time %s is %s, as Go parses it', (value, valid) => {
    expect(isRfc3339DateTime(value)).toBe(valid);
  });
});
