// The plugin entry (scripts/plugin-entry.mjs, bundled like the real binaries into the runtime fixture) keeps a V8
// code cache of the cache-hit path beside Node's compile cache: written after the first run, used afterwards, never
// read from or written to a directory others could write, and a damaged one is only a slower start.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildRuntimeFixture, execInfo, runChild, V1 } from '../helpers/plugin-runtime.js';

let stub: string;

beforeAll(async () => {
  stub = await buildRuntimeFixture();
});

/** Node's compile cache directory for `dir` (a per-version subdirectory), as the entry finds it. */
function compileCacheDir(dir: string): string {
  const result = spawnSync(
    process.execPath,
    [
      '-e',
      `const m = require('node:module'); m.enableCompileCache(${JSON.stringify(dir)}); process.stdout.write(m.getCompileCacheDir())`,
    ],
    {
      encoding: 'utf8',
    },
  );
  return result.stdout;
}

const codeCaches = (dir: string): string[] => {
  try {
    return readdirSync(dir).filter((name) => /^runtime-fixture-\d+-\d+-\d+\.v8$/.test(name));
  } catch {
    return [];
  }
};

async function credential(cacheDir: string, compileCache: string) {
  const result = await runChild(stub, ['--subject', 'alice', '--cache-dir', cacheDir], {
    KUBERNETES_EXEC_INFO: execInfo(V1),
    NODE_COMPILE_CACHE: compileCache,
  });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  expect(JSON.parse(result.stdout)).toMatchObject({ kind: 'ExecCredential', status: { token: expect.any(String) } });
}

describe('the code cache of the cache-hit path', () => {
  it('is written after the first run (0600, named after the bundle), then used and left alone', async () => {
    const root = mkdtempSync(join(tmpdir(), 'cpc-code-cache-'));
    const compileCache = join(root, 'compile-cache');
    await credential(join(root, 'cache'), compileCache);
    const dir = compileCacheDir(compileCache);
    const [file] = codeCaches(dir);
    expect(file).toBeDefined();
    const written = statSync(join(dir, file!));
    expect(written.mode & 0o777).toBe(0o600);
    expect(written.size).toBeGreaterThan(10_000);
    await credential(join(root, 'cache'), compileCache);
    await credential(join(root, 'cache'), compileCache);
    expect(codeCaches(dir)).toEqual([file]);
    expect(statSync(join(dir, file!)).mtimeMs).toBe(written.mtimeMs);
  });

  it('is neither read nor written in a directory group or others can write', async () => {
    const root = mkdtempSync(join(tmpdir(), 'cpc-code-cache-'));
    const compileCache = join(root, 'compile-cache');
    const dir = compileCacheDir(compileCache);
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o777);
    await credential(join(root, 'cache'), compileCache);
    expect(codeCaches(dir)).toEqual([]);
    // A cache planted there is not used either: the run neither fails on it nor replaces it.
    await credential(join(root, 'cache'), join(root, 'elsewhere'));
    const [planted] = codeCaches(compileCacheDir(join(root, 'elsewhere')));
    writeFileSync(join(dir, planted!), 'not V8 code');
    await credential(join(root, 'cache'), compileCache);
    expect(statSync(join(dir, planted!)).size).toBe('not V8 code'.length);
  });

  it('a damaged code cache is rejected by V8 and written again; the credential is served all the same', async () => {
    const root = mkdtempSync(join(tmpdir(), 'cpc-code-cache-'));
    const compileCache = join(root, 'compile-cache');
    await credential(join(root, 'cache'), compileCache);
    const dir = compileCacheDir(compileCache);
    const [file] = codeCaches(dir);
    writeFileSync(join(dir, file!), Buffer.alloc(4096, 7), { mode: 0o600 });
    await credential(join(root, 'cache'), compileCache);
    expect(statSync(join(dir, file!)).size).toBeGreaterThan(10_000);
  });
});
