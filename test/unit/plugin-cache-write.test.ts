/**
 * The cache's write path at fleet scale: an entry written without an fsync and without listing the directory, and the
 * debris of a writer that died (a temporary file next to its entry) removed by whoever breaks its stale lock.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFileAtomicSync } from '../../src/base/private-files/atomic-write.js';
import { acquireLock } from '../../src/base/private-files/pid-lock.js';
import { cacheKey, obtainCredential, type CredentialProvider } from '../../src/plugin/index.js';

const posix = process.platform !== 'win32';
const root = mkdtempSync(join(tmpdir(), 'cpc-cache-write-'));
let counter = 0;
const fresh = (name: string): string => {
  const dir = join(root, `${name}-${(counter += 1)}`);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
};

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

const lockOptions = { timeoutMs: 2_000, pollMs: 5, staleMs: 600_000, now: () => new Date() };

describe.runIf(posix)('writeFileAtomicSync without fsync (durable: false)', () => {
  it('replaces the file with a 0600 one and leaves no temporary file', async () => {
    const dir = fresh('write');
    const file = join(dir, 'entry.json');
    writeFileSync(file, 'old', { mode: 0o600 });
    writeFileAtomicSync(file, 'new ✓', 0o600, { durable: false });
    expect(readFileSync(file, 'utf8')).toBe('new ✓');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['entry.json']);
  });

  it('a failed rename leaves the old file and no temporary file, and throws the file system error', async () => {
    const dir = fresh('fail');
    const file = join(dir, 'entry.json');
    mkdirSync(file); // a directory in the way: the rename fails
    writeFileSync(join(file, 'inside'), 'x');
    expect(() => writeFileAtomicSync(file, 'new', 0o600, { durable: false })).toThrow(
      expect.objectContaining({ code: expect.stringMatching(/^E(ISDIR|NOTEMPTY|EXIST)$/) }),
    );
    expect(readdirSync(dir)).toEqual(['entry.json']);
  });
});

describe.runIf(posix)('debris of a writer that died', () => {
  it("breaking a dead holder's lock removes the temporary files of the file it protects, and only those", async () => {
    const dir = fresh('debris');
    const entry = join(dir, `${'a'.repeat(64)}.json`);
    const lock = join(dir, `${'a'.repeat(64)}.lock`);
    writeFileSync(lock, JSON.stringify({ pid: deadPid(), host: hostname(), createdAt: Date.now(), token: 'dead' }));
    writeFileSync(`${entry}.0123456789ab.tmp`, '{"partial', { mode: 0o600 });
    writeFileSync(join(dir, `${'b'.repeat(64)}.json.0123456789ab.tmp`), '{"partial', { mode: 0o600 });
    writeFileSync(`${entry}.notes`, 'not a temporary file');
    const held = await acquireLock(lock, { ...lockOptions, protects: entry });
    expect(readdirSync(dir).sort()).toEqual([
      `${'a'.repeat(64)}.json.notes`,
      `${'a'.repeat(64)}.lock`,
      `${'b'.repeat(64)}.json.0123456789ab.tmp`,
    ]);
    held.release();
  });

  it("a live holder's temporary files are left alone (its lock is not broken)", async () => {
    const dir = fresh('live');
    const entry = join(dir, 'x.json');
    const first = await acquireLock(join(dir, 'x.lock'), { ...lockOptions, protects: entry });
    writeFileSync(`${entry}.00ff.tmp`, 'in progress', { mode: 0o600 });
    await expect(
      acquireLock(join(dir, 'x.lock'), { ...lockOptions, timeoutMs: 0, protects: entry }),
    ).rejects.toMatchObject({ code: 'ERR_PLUGIN_CACHE_LOCKED' });
    expect(existsSync(`${entry}.00ff.tmp`)).toBe(true);
    first.release();
  });

  it('obtainCredential after a plugin was killed mid-write: the stale lock and the partial entry are cleared, the new entry is whole', async () => {
    const provider: CredentialProvider<
      { subject: { type: 'string'; required: true; description: string } },
      { subject: string }
    > = {
      name: 'cache-write-unit',
      description: 'unit provider',
      flags: { subject: { type: 'string', required: true, description: 'who' } },
      settings: ({ flags }) => ({ subject: flags.subject }),
      cacheKey: (settings) => settings,
      issue: async (settings, context) => ({
        status: {
          token: `${settings.subject}-token`,
          expirationTimestamp: new Date(context.now().getTime() + 3_600_000).toISOString(),
        },
      }),
    };
    const cacheDir = fresh('obtain');
    const key = cacheKey('cache-write-unit', { subject: 'dan' });
    writeFileSync(
      join(cacheDir, `${key}.lock`),
      JSON.stringify({ pid: deadPid(), host: hostname(), createdAt: Date.now(), token: 'dead' }),
      { mode: 0o600 },
    );
    writeFileSync(join(cacheDir, `${key}.json.c0ffee.tmp`), '{"version":1,"key":"', { mode: 0o600 });
    const obtained = await obtainCredential(provider, {
      input: { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false } },
      flags: { subject: 'dan' },
      env: {},
      now: () => new Date(),
      signal: new AbortController().signal,
      cacheDir,
    });
    expect(obtained).toMatchObject({ status: { token: 'dan-token' }, fromCache: false });
    expect(readdirSync(cacheDir)).toEqual([`${key}.json`]);
    expect(JSON.parse(readFileSync(join(cacheDir, `${key}.json`), 'utf8'))).toMatchObject({
      version: 1,
      key,
      status: { token: 'dan-token' },
    });
  });
});
