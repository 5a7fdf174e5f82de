// The runtime's promises, checked on the real plugin binaries as built by `npm run build` (bin stub + dist/bin
// bundle): what their static import graph (= what a cache hit loads) contains, `clean`, and bad input.
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runChild } from '../helpers/plugin-runtime.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const plugins = ['tenant-cert', 'token-request', 'oidc'] as const;
const recorder = ['--import', new URL('../fixtures/runtime/record-loads.mjs', import.meta.url).href];

// Code of libraries a cache hit must not load, recognised by names only they define.
const heavyMarkers = {
  jose: 'ERR_JWKS_MULTIPLE_MATCHING_KEYS',
  // The HTTP seam (src/base/http.ts: its own HTTP/1.1 over node:net + node:tls; undici, then node:http, before it,
  // neither bundled now). The marker is a message of src/base/http/connect.ts.
  'the HTTP seam': 'no tunnel through the proxy within the deadline',
  yaml: 'YAMLParseError',
  yargs: 'yargs-parser',
  '@peculiar/x509': 'X509CertificateGenerator',
};

describe.each(plugins)('clusterprofile-%s', (name) => {
  const stub = join(root, 'bin', `clusterprofile-${name}.mjs`);
  const bundle = join(root, 'dist', 'bin', `clusterprofile-${name}.mjs`);

  it('is built (npm run build)', () => {
    expect(existsSync(bundle), `${bundle} is missing: run npm run build`).toBe(true);
  });

  it('statically loads only the runtime and light provider code: no HTTP, TLS, JOSE, YAML, yargs, x509, client-node', async () => {
    if (!existsSync(bundle)) return;
    const record = join(mkdtempSync(join(tmpdir(), 'cpc-bin-loads-')), 'loads.json');
    // --help runs after the whole static graph is loaded and evaluated: exactly what a cache hit has loaded too.
    const result = await runChild(stub, ['--help'], { RECORD_LOADS_FILE: record }, recorder);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`usage: clusterprofile-${name}`);
    const loads = JSON.parse(readFileSync(record, 'utf8')) as { urls: string[]; builtins: string[] };
    const files = [...new Set(loads.urls.filter((url) => url.startsWith('file:')))].map((url) => fileURLToPath(url));
    expect(files.filter((file) => file.includes('node_modules'))).toEqual([]);
    for (const builtin of ['http', 'https', 'tls', 'http2', 'zlib']) {
      expect(loads.builtins, `node:${builtin}`).not.toContain(builtin);
    }
    const found = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return Object.entries(heavyMarkers)
        .filter(([, marker]) => text.includes(marker))
        .map(([library]) => `${library} in ${file}`);
    });
    expect(found).toEqual([]);
    const bytes = files.reduce((sum, file) => sum + statSync(file).size, 0);
    expect(bytes, `code loaded at start-up: ${files.join(', ')}`).toBeLessThan(96 * 1024);
    // The bin stub, the entry and the one file of the cache-hit path (scripts/bundle-options.mjs).
    expect(files.map((file) => file.slice(root.length)).sort()).toEqual(
      [
        `bin/clusterprofile-${name}.mjs`,
        // The Node.js version check every entry point runs first (a too old Node fails at once, coded).
        'dist/base/node-floor-exit.js',
        'dist/base/node-floor.js',
        `dist/bin/clusterprofile-${name}.cjs`,
        `dist/bin/clusterprofile-${name}.mjs`,
      ].sort(),
    );
  });

  it('clean empties $KUBECACHEDIR/clusterprofile/<provider>', async () => {
    if (!existsSync(bundle)) return;
    const base = mkdtempSync(join(tmpdir(), 'cpc-bin-clean-'));
    const result = await runChild(stub, ['clean'], { KUBECACHEDIR: base });
    expect(result).toMatchObject({
      code: 0,
      stdout: `removed 0 cached credentials from ${join(base, 'clusterprofile', name)}\n`,
    });
  });

  it('bad KUBERNETES_EXEC_INFO or flags: exit 2, empty stdout, one error line without a stack', async () => {
    if (!existsSync(bundle)) return;
    const result = await runChild(stub, ['--no-such-flag'], { KUBERNETES_EXEC_INFO: '{"kind":' });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(new RegExp(`^clusterprofile-${name}: ERR_`));
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});

it('the markers are real: each is found in the code the binaries run (so their absence above means something)', () => {
  const dirs = [join(root, 'dist', 'bin'), join(root, 'dist', 'bin', 'chunks')];
  if (!dirs.every((dir) => existsSync(dir))) return;
  const text = dirs
    .flatMap((dir) =>
      readdirSync(dir)
        .filter((file) => file.endsWith('.mjs'))
        .map((file) => readFileSync(join(dir, file), 'utf8')),
    )
    .join('\n');
  // A dependency of the package is imported from node_modules, not bundled (scripts/bundle-options.mjs): its marker
  // is in its own files.
  const { dependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const external = (library: string) => Object.hasOwn(dependencies, library);
  const missing = Object.entries(heavyMarkers).filter(([library, marker]) =>
    external(library)
      ? !(new RegExp(`(from |import\\()"${library}"`).test(text) && packageText(library).includes(marker))
      : !text.includes(marker),
  );
  expect(missing).toEqual([]);
});

/** The JavaScript of an installed package, concatenated. */
function packageText(library: string): string {
  const dir = join(root, 'node_modules', library);
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(c|m)?js$/.test(file))
    .map((file) => readFileSync(join(dir, file), 'utf8'))
    .join('\n');
}
