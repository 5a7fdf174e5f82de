// The error registry (src/base/error-registry.ts) against the code that raises errors, the generated docs, the type
// checker, a second copy of the package, and the exit codes the plugin runtime and the CLI derive from it.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { run as cli } from '../../src/cli/main.js';
import { ERROR_DOCS } from '../../src/base/error-docs.js';
import {
  CredentialsError,
  ERRORS,
  errorSpec,
  formatError,
  isCredentialsError,
  type ErrorCode,
} from '../../src/base/errors.js';
import { runPlugin, type CredentialProvider, type ProcessIo } from '../../src/plugin/index.js';
import { retryableError } from '../../src/providers/tenant-cert/consumer/transport.js';
// @ts-expect-error -- a plain ESM build script without type declarations
import { docsPath, loadRegistry, renderErrorDocs } from '../../scripts/generate-error-docs.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const codes = Object.keys(ERRORS) as ErrorCode[];

/**
 * `ERR_*` string literals in src outside comments that are not registry codes: node's TLS code matched by the issuer
 * client, and the low-level codes of the HTTP wire layer (src/base/http/http1.ts: node's own names for a bad request
 * head, two of its own for a malformed answer), which the HTTP seam classifies and callers map to their registry codes.
 */
const FOREIGN = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_INVALID_HTTP_TOKEN',
  'ERR_INVALID_CHAR',
  'ERR_UNESCAPED_CHARACTERS',
  'ERR_HTTP_INVALID_RESPONSE',
  'ERR_HTTP_HEADER_OVERFLOW',
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return relative(root, path) === join('src', 'generated') ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') &&
      ![join('src', 'base', 'error-registry.ts'), join('src', 'base', 'error-docs.ts')].includes(relative(root, path))
      ? [path]
      : [];
  });
}

/** Every `'ERR_…'` literal of src outside comments, and whether it is only compared against (`=== 'ERR_…'`). */
/** The package's src/ and each workspace's (plugins/<name>/src): the code that raises registered errors. */
const sourceRoots = [
  join(root, 'src'),
  ...readdirSync(join(root, 'plugins')).map((workspace) => join(root, 'plugins', workspace, 'src')),
];

function literals(): { code: string; file: string; compared: boolean }[] {
  return sourceRoots.flatMap(sourceFiles).flatMap((file) => {
    const text = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    return [...text.matchAll(/'(ERR_[A-Z0-9_]*[A-Z0-9])'/g)].map((match) => ({
      code: match[1]!,
      file: relative(root, file),
      compared: /[!=]==\s*$/.test(text.slice(Math.max(0, match.index - 8), match.index)),
    }));
  });
}

function memoryIo(): ProcessIo & { out(): string; err(): string } {
  const stdin = Object.assign(new PassThrough(), { isTTY: false });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return { stdin, stdout, stderr, out: () => out, err: () => err };
}

/** A provider whose settings() or issue() throws `error`. */
function failing(where: 'settings' | 'issue', error: unknown): CredentialProvider<Record<string, never>, object> {
  return {
    name: 'registry-unit',
    description: 'throws',
    flags: {},
    settings: () => {
      if (where === 'settings') throw error;
      return {};
    },
    cacheKey: () => ({}),
    issue: async () => {
      throw error;
    },
  };
}

async function exitOf(where: 'settings' | 'issue', error: unknown): Promise<{ code: number; err: string }> {
  const io = memoryIo();
  const cache = mkdtempSync(join(tmpdir(), 'cpc-registry-unit-'));
  const code = await runPlugin(failing(where, error))(['--cache-dir', cache], {}, io);
  expect(io.out()).toBe('');
  return { code, err: io.err() };
}

/** A second copy of the package's error module, bundled apart as another installed copy would be. */
async function secondCopy(): Promise<typeof import('../../src/base/errors.js')> {
  const result = await build({
    entryPoints: [join(root, 'src/base/errors.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    write: false,
  });
  return import(`data:text/javascript;base64,${Buffer.from(result.outputFiles[0]!.text).toString('base64')}`);
}

describe('the error registry', () => {
  it('knows every code raised in src', () => {
    const unknown = literals().filter(({ code }) => !Object.hasOwn(ERRORS, code) && !FOREIGN.has(code));
    expect(unknown.map(({ code, file }) => `${code} in ${file}`)).toEqual([]);
  });

  it('holds no code that nothing in src or a workspace raises (a dead entry is wrong documentation)', () => {
    const raised = new Set(
      literals()
        .filter(({ compared }) => !compared)
        .map(({ code }) => code),
    );
    expect(codes.filter((code) => !raised.has(code))).toEqual([]);
  });

  it('gives every code an area, an exit code, a retry flag and one line of documentation', () => {
    for (const code of codes) {
      const spec = { ...errorSpec(code)!, ...ERROR_DOCS[code] };
      expect([1, 2], code).toContain(spec.exit);
      expect(typeof spec.retryable, code).toBe('boolean');
      expect(spec.doc, code).toMatch(/^\S.*\S$/);
      expect(spec.doc, code).not.toMatch(/[\n|]/);
      if (spec.http !== undefined) {
        expect(spec.area, `${code}: only the issuer answers with HTTP statuses`).toBe('issuer');
        expect(spec.http, code).toBeGreaterThanOrEqual(400);
      }
    }
  });

  it('docs/reference/errors.md is what scripts/generate-error-docs.mjs makes of it (run `npm run docs:errors`)', async () => {
    const expected = renderErrorDocs(await loadRegistry());
    expect(
      readFileSync(join(root, docsPath), 'utf8'),
      'docs/reference/errors.md is stale: run `npm run docs:errors`',
    ).toBe(expected);
    for (const code of codes) expect(expected).toContain(`| \`${code}\` |`);
  });
});

describe('CredentialsError', () => {
  it('takes registered codes only, and reads exit code, retry and HTTP status from the registry', () => {
    // @ts-expect-error -- a misspelled code does not compile
    const misspelled = new CredentialsError('ERR_PLUGIN_USGAE', 'x');
    expect([misspelled.exitCode, misspelled.retryable, misspelled.httpStatus]).toEqual([undefined, false, undefined]);
    // @ts-expect-error -- only a code the registry marks retryable may be made a retryable issuer-client error
    retryableError('ERR_TENANT_CERT_ISSUER_TLS', 'x');

    const usage = new CredentialsError('ERR_PLUGIN_USAGE', 'x');
    expect([usage.exitCode, usage.retryable, usage.httpStatus]).toEqual([2, false, undefined]);
    const busy = new CredentialsError('ERR_ISSUER_BUSY', 'x');
    expect([busy.exitCode, busy.retryable, busy.httpStatus]).toEqual([1, true, 503]);
    // Derived, not own properties: nothing of the registry is copied onto the instance.
    expect(Object.keys(busy).sort()).toEqual(['code', 'name']);
    // `path` and `hint` only when given: Node's printout of an uncaught error shows no `hint: undefined`.
    expect(inspect(busy)).not.toContain('undefined');
    const hinted = new CredentialsError('ERR_ISSUER_BUSY', 'x', { path: '--listen', hint: 'wait' });
    expect([hinted.path, hinted.hint, Object.keys(hinted).sort()]).toEqual([
      '--listen',
      'wait',
      ['code', 'hint', 'name', 'path'],
    ]);
  });

  it('is recognised by its brand across two copies of the package, never by name or instanceof', async () => {
    const other = await secondCopy();
    const theirs = new other.CredentialsError('ERR_PLUGIN_CACHE_LOCKED', 'held by process 42', {
      path: '/cache/x.lock',
    });
    const ours = new CredentialsError('ERR_TENANT_CERT_FLAG', 'bad --timeout', { path: '--timeout' });
    expect(theirs instanceof CredentialsError).toBe(false);
    expect(isCredentialsError(theirs)).toBe(true);
    expect(other.isCredentialsError(ours)).toBe(true);
    expect(formatError(theirs)).toBe('ERR_PLUGIN_CACHE_LOCKED: held by process 42 (at /cache/x.lock)');
    expect([theirs.exitCode, theirs.retryable]).toEqual([1, true]);

    const lookalike = Object.assign(new Error('x'), { name: 'CredentialsError', code: 'ERR_USAGE' });
    expect(isCredentialsError(lookalike)).toBe(false);
    const brand = Symbol.for('clusterprofile-credentials.error');
    expect(isCredentialsError({ [brand]: true, code: 'ERR_USAGE' })).toBe(true);
    expect(isCredentialsError({ [brand]: true, code: 42 })).toBe(false);
    expect(isCredentialsError(null)).toBe(false);
  });
});

describe('exit codes come from the registry', () => {
  it('plugin runtime: the code decides wherever it is raised; a code from another copy too', async () => {
    expect(
      await exitOf('issue', new CredentialsError('ERR_OIDC_CONFIG', 'the private key does not fit algorithm ES256')),
    ).toMatchObject({ code: 2 });
    expect(await exitOf('settings', new CredentialsError('ERR_PLUGIN_CACHE_IO', 'unknown --mode "x"'))).toMatchObject({
      code: 1,
    });
    const other = await secondCopy();
    const fromOther = await exitOf(
      'issue',
      new other.CredentialsError('ERR_TENANT_CERT_KEY_FILE', 'the key file is accessible by others'),
    );
    expect(fromOther).toEqual({
      code: 2,
      err: 'clusterprofile-registry-unit: ERR_TENANT_CERT_KEY_FILE: the key file is accessible by others\n',
    });
  });

  it("plugin runtime: a provider's own code exits 2 from settings and 1 from issue; an uncoded error is internal (1)", async () => {
    const own = new CredentialsError('ERR_ACME_CONFIG' as ErrorCode, 'no tenant');
    expect(await exitOf('settings', own)).toMatchObject({ code: 2 });
    expect(await exitOf('issue', own)).toMatchObject({ code: 1 });
    const internal = await exitOf('settings', new TypeError('boom'));
    expect(internal.code).toBe(1);
    expect(internal.err).toContain('internal error: boom');
  });

  it("CLI: a command's error exits with its code's exit code (identity import without HOME: ERR_TENANT_CERT_FLAG, 2)", async () => {
    const io = memoryIo();
    expect(await cli(['identity', 'import', 'identity.yaml', '--key-file', 'consumer.key'], {}, io)).toBe(2);
    expect(io.err()).toBe('ERR_TENANT_CERT_FLAG: no --identity-dir given and HOME is not set (at --identity-dir)\n');
    expect(io.out()).toBe('');
  });
});
