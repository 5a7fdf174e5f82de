// The one-schema validator modules (src/generated/validator.<id>.ts, loaded by a plugin's cache miss) hold exactly
// their schema and find the same issues, worded the same, as the module of every schema behind validateDocument.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';
import { schemaIds, type SchemaId } from '../../src/generated/validators.js';
import { validateDocument } from '../../src/schemas/index.js';
import { assertWith, validateWith, type SchemaModule } from '../../src/schemas/issues.js';
import { isCredentialsError } from '../../src/base/errors.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const load = async (id: SchemaId) =>
  (await import(
    /* @vite-ignore */ pathToFileURL(`${root}src/generated/validator.${id}.ts`).href
  )) as SchemaModule<string> & { schemaIds: readonly string[] };

/** Documents that fail most schemas in different ways (wrong type, missing and unknown members, bad values). */
const samples: unknown[] = [
  null,
  'text',
  {},
  {
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    spec: { interactive: 'yes', cluster: { server: 7 } },
  },
  {
    apiVersion: 'v1',
    kind: 'Other',
    metadata: { name: '' },
    spec: [],
    status: { accessProviders: [{ name: 'a' }, { name: 'a' }] },
    extra: true,
  },
  { issuerURL: 'not a url', clientID: '', grant: 'nope', scopes: 'openid' },
];

describe('one validator module per schema', () => {
  test.each(schemaIds)(
    '%s: its own module exists, holds only that schema and agrees with validateDocument',
    async (id) => {
      expect(existsSync(`${root}src/generated/validator.${id}.ts`)).toBe(true);
      const single = await load(id);
      expect(single.schemaIds).toEqual([id]);
      for (const doc of samples) {
        expect(validateWith(single, id, doc)).toEqual(validateDocument(id, doc));
      }
    },
  );

  test('an id the module does not hold is a TypeError, not an empty result', async () => {
    const single = await load('execcredential-input.v1');
    expect(() => validateWith(single, 'providers-file', {})).toThrow(TypeError);
  });

  test("assertWith throws the caller's code with the first issue's path, and returns a valid document as it is", async () => {
    const single = await load('execcredential-input.v1');
    const valid = {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    };
    expect(
      assertWith(single, 'execcredential-input.v1', valid, {
        code: 'ERR_PLUGIN_EXEC_INFO',
        what: 'KUBERNETES_EXEC_INFO',
      }),
    ).toBe(valid);
    let thrown: unknown;
    try {
      assertWith(
        single,
        'execcredential-input.v1',
        { ...valid, spec: { interactive: 'no' } },
        { code: 'ERR_PLUGIN_EXEC_INFO', what: 'KUBERNETES_EXEC_INFO' },
      );
    } catch (error) {
      thrown = error;
    }
    expect(isCredentialsError(thrown)).toBe(true);
    expect(thrown).toMatchObject({ code: 'ERR_PLUGIN_EXEC_INFO', path: '$.spec.interactive' });
    expect((thrown as Error).message).toMatch(/^KUBERNETES_EXEC_INFO is invalid: \$\.spec\.interactive: /);
  });
});
