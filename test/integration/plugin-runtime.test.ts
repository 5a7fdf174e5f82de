// The plugin runtime as users meet it: the fixture provider bundled like a real plugin binary and run as real
// child processes, with a real cache directory.
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildRuntimeFixture, execInfo, runChild, V1, V1BETA1, type ChildResult } from '../helpers/plugin-runtime.js';

let stub: string;

beforeAll(async () => {
  stub = await buildRuntimeFixture();
});

function workspace(): { dir: string; cache: string; count: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cpc-runtime-'));
  return { dir, cache: join(dir, 'cache'), count: join(dir, 'issued.log') };
}

function issuances(count: string): number {
  return existsSync(count) ? readFileSync(count, 'utf8').trim().split('\n').filter(Boolean).length : 0;
}

function credential(result: ChildResult): {
  apiVersion: string;
  kind: string;
  status: { token?: string; expirationTimestamp?: string };
} {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const lines = result.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(result.stdout);
}

function tokenClaims(token: string | undefined): { sub: string; server: string | null; generation: number } {
  return JSON.parse(Buffer.from(token ?? '', 'base64url').toString('utf8'));
}

describe('exec credential protocol', () => {
  it.each([V1, V1BETA1])(
    'answers %s in the apiVersion it was asked in, and serves the second call from the cache',
    async (apiVersion) => {
      const w = workspace();
      const args = ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count];
      const env = { KUBERNETES_EXEC_INFO: execInfo(apiVersion) };
      const first = credential(await runChild(stub, args, env));
      expect(first).toMatchObject({ apiVersion, kind: 'ExecCredential' });
      expect(tokenClaims(first.status.token)).toEqual({
        sub: 'alice',
        server: 'https://cluster.example:6443',
        generation: 1,
      });
      expect(Date.parse(first.status.expirationTimestamp ?? '')).toBeGreaterThan(Date.now() + 3_000_000);

      const second = credential(await runChild(stub, args, env));
      expect(second).toEqual(first);
      expect(issuances(w.count)).toBe(1);
      // The cache is private: 0700 directory, 0600 entry.
      expect(statSync(w.cache).mode & 0o777).toBe(0o700);
      const files = readdirSync(w.cache);
      expect(files).toHaveLength(1);
      expect(statSync(join(w.cache, files[0] ?? '')).mode & 0o777).toBe(0o600);
    },
  );

  it('falls back to v1beta1 without KUBERNETES_EXEC_INFO (very old clients)', async () => {
    const w = workspace();
    const result = credential(await runChild(stub, ['--subject', 'alice', '--cache-dir', w.cache], {}));
    expect(result.apiVersion).toBe(V1BETA1);
    expect(tokenClaims(result.status.token).server).toBeNull();
  });

  it('keeps identities apart: another cluster or subject is another cache entry', async () => {
    const w = workspace();
    const base = ['--cache-dir', w.cache, '--count-file', w.count];
    await runChild(stub, ['--subject', 'alice', ...base], { KUBERNETES_EXEC_INFO: execInfo(V1) });
    const other = credential(
      await runChild(stub, ['--subject', 'alice', ...base], {
        KUBERNETES_EXEC_INFO: execInfo(V1, { server: 'https://other:6443' }),
      }),
    );
    const bob = credential(await runChild(stub, ['--subject', 'bob', ...base], { KUBERNETES_EXEC_INFO: execInfo(V1) }));
    expect(tokenClaims(other.status.token)).toMatchObject({ sub: 'alice', server: 'https://other:6443' });
    expect(tokenClaims(bob.status.token)).toMatchObject({ sub: 'bob' });
    expect(issuances(w.count)).toBe(3);
  });

  it('honours KUBECACHEDIR: entries live under clusterprofile/<provider>/', async () => {
    const w = workspace();
    credential(
      await runChild(stub, ['--subject', 'alice'], { KUBECACHEDIR: w.cache, KUBERNETES_EXEC_INFO: execInfo(V1) }),
    );
    expect(readdirSync(join(w.cache, 'clusterprofile', 'runtime-fixture'))).toHaveLength(1);
  });

  it.each([
    ['not JSON', '{"kind":', 'ERR_PLUGIN_EXEC_INFO: KUBERNETES_EXEC_INFO is not JSON'],
    [
      'an unknown apiVersion',
      JSON.stringify({ kind: 'ExecCredential', apiVersion: 'client.authentication.k8s.io/v1alpha1', spec: {} }),
      'ERR_PLUGIN_EXEC_INFO',
    ],
    [
      'a cluster without server',
      JSON.stringify({ kind: 'ExecCredential', apiVersion: V1, spec: { cluster: { 'proxy-url': 'x' } } }),
      '$.spec.cluster.server',
    ],
  ])(
    'rejects KUBERNETES_EXEC_INFO that is %s: exit 2, nothing on stdout, nothing cached',
    async (_what, info, message) => {
      const w = workspace();
      const result = await runChild(stub, ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count], {
        KUBERNETES_EXEC_INFO: info,
      });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(issuances(w.count)).toBe(0);
      expect(existsSync(w.cache)).toBe(false);
    },
  );

  it('reports usage mistakes with exit 2: unknown flag, missing required flag, bad provider settings', async () => {
    const w = workspace();
    const env = { KUBERNETES_EXEC_INFO: execInfo(V1) };
    const unknown = await runChild(stub, ['--subject', 'a', '--colour', 'red', '--cache-dir', w.cache], env);
    expect([unknown.code, unknown.stdout]).toEqual([2, '']);
    expect(unknown.stderr).toContain("ERR_PLUGIN_USAGE: Unknown option '--colour'");
    const missing = await runChild(stub, ['--cache-dir', w.cache], env);
    expect([missing.code, missing.stdout]).toEqual([2, '']);
    expect(missing.stderr).toContain('missing required flag --subject');
    const settings = await runChild(stub, ['--subject', 'a/b', '--cache-dir', w.cache], env);
    expect([settings.code, settings.stdout]).toEqual([2, '']);
    expect(settings.stderr).toContain('ERR_FIXTURE_CONFIG: subject must not contain "/" (at --subject)');
  });

  it('a failing provider: exit 1, its error on stderr, nothing on stdout, nothing cached, lock released', async () => {
    const w = workspace();
    const args = ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count];
    const failed = await runChild(stub, args, { KUBERNETES_EXEC_INFO: execInfo(V1), FIXTURE_BEHAVIOUR: 'fail' });
    expect([failed.code, failed.stdout]).toEqual([1, '']);
    expect(failed.stderr).toBe(
      'clusterprofile-runtime-fixture: ERR_FIXTURE_DENIED: the issuer said no (at https://issuer.invalid/token)\n',
    );
    expect(readdirSync(w.cache)).toEqual([]);
    const half = await runChild(stub, args, { KUBERNETES_EXEC_INFO: execInfo(V1), FIXTURE_BEHAVIOUR: 'half' });
    expect([half.code, half.stdout]).toEqual([1, '']);
    expect(half.stderr).toContain(
      'ERR_PLUGIN_BAD_CREDENTIAL: the provider returned only a certificate or a key, not both',
    );
    expect(readdirSync(w.cache)).toEqual([]);
  });
});

describe('cache', () => {
  it('100 parallel invocations on a cold cache: exactly one issuance, all 100 print the same valid credential', async () => {
    const w = workspace();
    const args = ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count];
    const env = { KUBERNETES_EXEC_INFO: execInfo(V1), FIXTURE_DELAY_MS: '200' };
    const results = await Promise.all(Array.from({ length: 100 }, () => runChild(stub, args, env)));
    const failures = results.filter((result) => result.code !== 0);
    expect(failures).toEqual([]);
    const tokens = new Set(results.map((result) => JSON.parse(result.stdout).status.token as string));
    expect(tokens.size).toBe(1);
    expect(tokenClaims([...tokens][0]).generation).toBe(1);
    expect(issuances(w.count)).toBe(1);
    expect(readdirSync(w.cache).filter((name) => !name.endsWith('.json'))).toEqual([]); // lock released, no temp files
  }, 300_000);

  it('refuses a cache directory or entry that group or others can read, with the path and a fix', async () => {
    const w = workspace();
    mkdirSync(w.cache, { mode: 0o700 });
    chmodSync(w.cache, 0o755);
    const args = ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count];
    const env = { KUBERNETES_EXEC_INFO: execInfo(V1) };
    const refused = await runChild(stub, args, env);
    expect([refused.code, refused.stdout]).toEqual([1, '']);
    expect(refused.stderr).toContain(
      `ERR_PLUGIN_CACHE_INSECURE: refusing to use the credential cache: ${w.cache} is accessible by group or others (mode 755)`,
    );
    expect(refused.stderr).toContain(`hint: chmod 700 '${w.cache}'`);
    expect(issuances(w.count)).toBe(0);

    chmodSync(w.cache, 0o700);
    credential(await runChild(stub, args, env));
    const entry = join(w.cache, readdirSync(w.cache)[0] ?? '');
    chmodSync(entry, 0o644);
    const refusedFile = await runChild(stub, args, env);
    expect([refusedFile.code, refusedFile.stdout]).toEqual([1, '']);
    expect(refusedFile.stderr).toContain(`${entry} is accessible by group or others (mode 644)`);
    expect(refusedFile.stderr).toContain(`hint: chmod 600 '${entry}'`);

    // clean still works there: removing exposed secrets is the point.
    const cleaned = await runChild(stub, ['clean', '--cache-dir', w.cache], {});
    expect([cleaned.code, cleaned.stdout]).toEqual([0, `removed 1 cached credential from ${w.cache}\n`]);
    expect(readdirSync(w.cache)).toEqual([]);
  });

  it('discards a corrupted entry (and says so) instead of crashing', async () => {
    const w = workspace();
    const args = ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count];
    const env = { KUBERNETES_EXEC_INFO: execInfo(V1) };
    credential(await runChild(stub, args, env));
    const entry = join(w.cache, readdirSync(w.cache)[0] ?? '');
    writeFileSync(entry, '{"version":1,"status":{"tok', { mode: 0o600 });
    const result = await runChild(stub, args, env);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`discarding the corrupted cache entry ${entry}: not JSON`);
    expect(tokenClaims(JSON.parse(result.stdout).status.token).generation).toBe(1);
    expect(issuances(w.count)).toBe(2);
    credential(await runChild(stub, args, env)); // the rewritten entry is good again
    expect(issuances(w.count)).toBe(2);
  });

  it('a plugin killed mid-issue leaves no entry and a stale lock that the next run recovers from', async () => {
    const w = workspace();
    const args = ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count];
    const crashed = await runChild(stub, args, { KUBERNETES_EXEC_INFO: execInfo(V1), FIXTURE_BEHAVIOUR: 'crash' });
    expect(crashed.signal).toBe('SIGKILL');
    expect(crashed.stdout).toBe('');
    const left = readdirSync(w.cache);
    expect(left.filter((name) => name.endsWith('.json'))).toEqual([]);
    expect(left.filter((name) => name.endsWith('.lock'))).toHaveLength(1);

    const next = await runChild(stub, args, { KUBERNETES_EXEC_INFO: execInfo(V1) });
    expect(next.code).toBe(0);
    expect(next.stderr).toMatch(/removed a stale cache lock of process \d+: its owner, process \d+, is gone/);
    expect(JSON.parse(next.stdout).kind).toBe('ExecCredential');
    expect(readdirSync(w.cache).filter((name) => name.endsWith('.lock'))).toEqual([]);
  });

  it('SIGTERM during issuance releases the lock and writes nothing', async () => {
    const w = workspace();
    const child = spawn(
      process.execPath,
      [stub, '--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count],
      {
        env: { PATH: process.env['PATH'], KUBERNETES_EXEC_INFO: execInfo(V1), FIXTURE_DELAY_MS: '30000' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('close', (_code, signal) => resolve(signal)),
    );
    const deadline = Date.now() + 20_000;
    while (issuances(w.count) === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(readdirSync(w.cache).filter((name) => name.endsWith('.lock'))).toHaveLength(1); // issuing, lock held
    child.kill('SIGTERM');
    expect(await exited).toBe('SIGTERM');
    expect(stdout).toBe('');
    expect(readdirSync(w.cache)).toEqual([]);
  });

  it('renews a credential that expires within the margin, handing the provider its previous state', async () => {
    const w = workspace();
    const args = ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count];
    // 30 s of validity is inside the default 60 s margin: every run renews.
    const env = { KUBERNETES_EXEC_INFO: execInfo(V1), FIXTURE_LIFETIME_S: '30' };
    credential(await runChild(stub, args, env));
    const second = credential(await runChild(stub, args, env));
    expect(tokenClaims(second.status.token).generation).toBe(2);
    expect(issuances(w.count)).toBe(2);
  });

  it('--force-refresh obtains a new credential even when the cached one is valid', async () => {
    const w = workspace();
    const args = ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count];
    const env = { KUBERNETES_EXEC_INFO: execInfo(V1) };
    credential(await runChild(stub, args, env));
    const forced = credential(await runChild(stub, [...args, '--force-refresh'], env));
    expect(tokenClaims(forced.status.token).generation).toBe(2);
    const after = credential(await runChild(stub, args, env));
    expect(after).toEqual(forced);
  });

  it('clean removes the cached credentials of this plugin', async () => {
    const w = workspace();
    const env = { KUBERNETES_EXEC_INFO: execInfo(V1) };
    for (const subject of ['alice', 'bob']) {
      credential(await runChild(stub, ['--subject', subject, '--cache-dir', w.cache, '--count-file', w.count], env));
    }
    writeFileSync(join(w.cache, 'README'), 'not ours');
    const cleaned = await runChild(stub, ['clean', '--cache-dir', w.cache], {});
    expect(cleaned).toMatchObject({ code: 0, stderr: '', stdout: `removed 2 cached credentials from ${w.cache}\n` });
    expect(readdirSync(w.cache)).toEqual(['README']);
    credential(await runChild(stub, ['--subject', 'alice', '--cache-dir', w.cache, '--count-file', w.count], env));
    expect(issuances(w.count)).toBe(3);
    const empty = await runChild(stub, ['clean'], { KUBECACHEDIR: join(w.dir, 'nothing-here') });
    expect(empty.stdout).toBe(
      `removed 0 cached credentials from ${join(w.dir, 'nothing-here', 'clusterprofile', 'runtime-fixture')}\n`,
    );
  });
});

describe('cache-hit path', () => {
  it('loads no provider code: no heavy chunk, no jose, no http/https/tls', async () => {
    const w = workspace();
    const preload = ['--import', new URL('../fixtures/runtime/record-loads.mjs', import.meta.url).href];
    const args = ['--subject', 'alice', '--cache-dir', w.cache];
    const record = join(w.dir, 'loads.json');
    const miss = await runChild(stub, args, { KUBERNETES_EXEC_INFO: execInfo(V1), RECORD_LOADS_FILE: record }, preload);
    expect(miss.code).toBe(0);
    const onMiss = JSON.parse(readFileSync(record, 'utf8')) as { urls: string[]; builtins: string[] };
    // The recorder sees the heavy code when it is loaded (a miss) ...
    expect(onMiss.urls.some((url) => /\/chunks\/heavy-/.test(url))).toBe(true);
    expect(onMiss.builtins).toContain('https');

    const hit = await runChild(stub, args, { KUBERNETES_EXEC_INFO: execInfo(V1), RECORD_LOADS_FILE: record }, preload);
    expect(hit.code).toBe(0);
    const onHit = JSON.parse(readFileSync(record, 'utf8')) as { urls: string[]; builtins: string[] };
    // ... and on a hit only the stub, the bundle and its shared chunks are loaded.
    expect(onHit.urls.filter((url) => /\/chunks\/(heavy|schemas)-|node_modules/.test(url))).toEqual([]);
    expect(onMiss.urls.some((url) => /\/chunks\/schemas-/.test(url))).toBe(true); // input checked against the schema on a miss
    const loadedBytes = [...new Set(onHit.urls.filter((url) => url.startsWith('file:')))].reduce(
      (sum, url) => sum + statSync(new URL(url)).size,
      0,
    );
    // What a token's hit reads: the stub, the entry and the one-file runtime (a certificate's validity reader is a chunk).
    expect(loadedBytes).toBeLessThan(65 * 1024);
    for (const heavy of ['http', 'https', 'tls', 'http2', 'zlib']) {
      expect(onHit.builtins).not.toContain(heavy);
    }
    // The start-up levers hold: no node:crypto, no stdio streams, no fs.promises (docs/explanation/plugin-startup.md).
    for (const avoidable of ['crypto', 'stream', 'internal/fs/promises', 'internal/readline/interface']) {
      expect(onHit.builtins).not.toContain(avoidable);
    }
    expect(onMiss.builtins).toContain('crypto'); // a miss may use it (random file names, lock tokens)
  });
});
