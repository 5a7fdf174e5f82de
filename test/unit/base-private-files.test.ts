import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  isTemporaryOf,
  removeTemporaryFiles,
  temporaryPath,
  writeFileAtomic,
  writeFileAtomicSync,
} from '../../src/base/private-files/atomic-write.js';
import { acquireLock, type LockOptions } from '../../src/base/private-files/pid-lock.js';
import { checkPrivateDirectory, PRIVATE_MODE_MASK, readPrivateFile } from '../../src/base/private-files/privacy.js';
import { lockDataDir } from '../../src/issuer/state/data-dir/files.js';

const posix = process.platform !== 'win32';
const root = mkdtempSync(join(tmpdir(), 'cpc-private-files-'));
let counter = 0;
const fresh = (name: string): string => join(root, `${name}-${(counter += 1)}`);

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

describe.runIf(posix)('private directories', () => {
  it('creates a missing one 0700 when asked; without asking, a missing one is `missing`', () => {
    const dir = join(fresh('made'), 'a', 'b');
    expect(checkPrivateDirectory(dir)).toEqual({ kind: 'missing' });
    expect(checkPrivateDirectory(dir, { create: true })).toBeUndefined();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it.each([0o750, 0o740, 0o710, 0o705, 0o702, 0o701, 0o777].map((mode) => [mode.toString(8), mode] as const))(
    'refuses mode %s (one mask: any group or other bit), and leaves it as it is',
    (_octal, mode) => {
      const dir = fresh('open');
      mkdirSync(dir, { mode: 0o700 });
      chmodSync(dir, mode);
      expect(checkPrivateDirectory(dir, { create: true })).toEqual({ kind: 'mode', mode });
      expect(statSync(dir).mode & 0o777).toBe(mode);
      expect(mode & PRIVATE_MODE_MASK).not.toBe(0);
    },
  );

  it('accepts 0700 and 0500; refuses a file where a directory belongs', () => {
    const dir = fresh('ok');
    mkdirSync(dir, { mode: 0o700 });
    expect(checkPrivateDirectory(dir)).toBeUndefined();
    chmodSync(dir, 0o500);
    expect(checkPrivateDirectory(dir)).toBeUndefined();
    const file = fresh('file');
    writeFileSync(file, '', { mode: 0o600 });
    expect(checkPrivateDirectory(file, { create: true })).toMatchObject({
      kind: 'type',
      expected: 'directory',
      found: 'file',
    });
  });

  it.runIf(process.getuid?.() === 0)('refuses a 0700 directory owned by another user', () => {
    const dir = fresh('theirs');
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, 65534, 65534);
    expect(checkPrivateDirectory(dir)).toEqual({ kind: 'owner', uid: 65534, user: 0 });
  });
});

describe.runIf(posix)('private files', () => {
  it('reads a 0600 (or 0400) file; refuses any group or other bit', () => {
    const file = fresh('key');
    writeFileSync(file, 'secret', { mode: 0o600 });
    expect(readPrivateFile(file)).toEqual({ text: 'secret' });
    chmodSync(file, 0o400);
    expect(readPrivateFile(file)).toEqual({ text: 'secret' });
    for (const mode of [0o640, 0o604, 0o620, 0o602, 0o610]) {
      chmodSync(file, mode);
      expect(readPrivateFile(file)).toEqual({ problem: { kind: 'mode', mode } });
    }
  });

  it('a directory, a missing file, a file over the bound', () => {
    const dir = fresh('dir');
    mkdirSync(dir, { mode: 0o700 });
    expect(readPrivateFile(dir)).toEqual({ problem: { kind: 'type', expected: 'file', found: 'directory' } });
    expect(readPrivateFile(fresh('missing'))).toEqual({ problem: { kind: 'missing' } });
    const big = fresh('big');
    writeFileSync(big, 'x'.repeat(101), { mode: 0o600 });
    const read = readPrivateFile(big, { maxBytes: 100 });
    expect(read).toMatchObject({ problem: { kind: 'io', operation: 'read', cause: { code: 'EFBIG' } } });
  });

  it('follows a symbolic link (a mounted Secret) unless told not to', () => {
    const target = fresh('target');
    writeFileSync(target, 'data', { mode: 0o600 });
    const link = fresh('link');
    symlinkSync(target, link);
    expect(readPrivateFile(link)).toEqual({ text: 'data' });
    expect(readPrivateFile(link, { followSymlinks: false })).toEqual({ problem: { kind: 'symlink' } });
  });

  it.runIf(process.getuid?.() === 0)('checks the owner unless told not to (a key provisioned for us)', () => {
    const file = fresh('provisioned');
    writeFileSync(file, 'key', { mode: 0o600 });
    chownSync(file, 65534, 65534);
    expect(readPrivateFile(file)).toEqual({ problem: { kind: 'owner', uid: 65534, user: 0 } });
    expect(readPrivateFile(file, { owner: false })).toEqual({ text: 'key' });
  });
});

describe('atomic replacement, async and sync', () => {
  it.each([
    ['async', (file: string, data: string, mode?: number) => writeFileAtomic(file, data, mode)],
    ['sync', async (file: string, data: string, mode?: number) => writeFileAtomicSync(file, data, mode)],
  ] as const)(
    '%s: replaces the file with the exact mode, leaves no temporary file; a failure leaves none either',
    async (_form, write) => {
      const dir = fresh('atomic');
      mkdirSync(dir);
      const file = join(dir, 'state.json');
      writeFileSync(file, 'old');
      const umask = process.umask(0o077);
      try {
        await write(file, 'new', 0o640);
      } finally {
        process.umask(umask);
      }
      expect(readFileSync(file, 'utf8')).toBe('new');
      if (posix) expect(statSync(file).mode & 0o777).toBe(0o640);
      await write(file, 'newer');
      if (posix) expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readdirSync(dir)).toEqual(['state.json']);
      await expect(write(join(dir, 'missing', 'x'), 'data')).rejects.toMatchObject({ code: 'ENOENT' });
      expect(readdirSync(dir)).toEqual(['state.json']);
    },
  );

  it('one temporary name, recognised for its own target only, and removable as debris', () => {
    const dir = fresh('debris');
    mkdirSync(dir);
    const file = join(dir, 'a.json');
    const temporary = temporaryPath(file);
    expect(temporary).toMatch(/\/a\.json\.[0-9a-f]{12}\.tmp$/);
    expect(isTemporaryOf('a.json.0a1b.tmp', 'a.json')).toBe(true);
    expect(isTemporaryOf('a.json.tmp', 'a.json')).toBe(false);
    expect(isTemporaryOf('a.json.x.tmp', 'a.json')).toBe(false);
    expect(isTemporaryOf('b.json.0a1b.tmp', 'a.json')).toBe(false);
    writeFileSync(temporary, 'partial');
    writeFileSync(join(dir, 'b.json.0a1b.tmp'), 'partial');
    writeFileSync(file, 'kept');
    removeTemporaryFiles(file);
    expect(readdirSync(dir).sort()).toEqual(['a.json', 'b.json.0a1b.tmp']);
  });
});

describe('the pid lock', () => {
  const now = () => new Date('2030-01-01T00:00:00Z');
  const busy = (owner: { pid: number } | undefined) =>
    Object.assign(new Error(`busy: ${owner?.pid}`), { code: 'ERR_TEST_BUSY' });
  const options: LockOptions = { timeoutMs: 0, pollMs: 5, staleMs: Number.POSITIVE_INFINITY, now, busyError: busy };

  it('takes over the lock of a dead process (ours or the older `<pid> <holder>` form)', async () => {
    for (const content of [
      (pid: number) => JSON.stringify({ pid, host: hostname(), createdAt: 0, token: 'old' }),
      (pid: number) => `${pid} issuer serve\n`,
    ]) {
      const file = fresh('dead.lock');
      const pid = deadPid();
      writeFileSync(file, content(pid));
      const broken: string[] = [];
      const lock = await acquireLock(file, {
        ...options,
        onBreak: (owner, reason) => broken.push(`${owner?.pid}: ${reason}`),
      });
      expect(broken).toEqual([`${pid}: its owner, process ${pid}, is gone`]);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
      lock.release();
      expect(readdirSync(join(file, '..')).filter((name) => name.startsWith('dead.lock'))).toEqual([]);
    }
  });

  it("refuses a live holder at once with the caller's error naming its pid; never by age when staleMs is Infinity", async () => {
    const file = fresh('live.lock');
    writeFileSync(file, JSON.stringify({ pid: process.ppid, host: hostname(), createdAt: 0, token: 'parent' }));
    await expect(acquireLock(file, options)).rejects.toMatchObject({
      code: 'ERR_TEST_BUSY',
      message: `busy: ${process.ppid}`,
    });
    expect(existsSync(file)).toBe(true);
  });

  it('a lock naming our own pid that we do not hold was left by an earlier process with our pid: taken over; one we hold is not', async () => {
    const file = fresh('reused.lock');
    writeFileSync(file, `${process.pid} issuer serve\n`);
    const lock = await acquireLock(file, options);
    await expect(acquireLock(file, options)).rejects.toMatchObject({
      code: 'ERR_TEST_BUSY',
      message: `busy: ${process.pid}`,
    });
    lock.release();
    expect(existsSync(file)).toBe(false);
  });

  it("the issuer's data-dir lock: ERR_ISSUER_DATA_DIR_LOCKED with the holder's pid and what it is; a dead holder's lock taken over", async () => {
    const dir = fresh('data');
    mkdirSync(dir, { mode: 0o700 });
    const file = join(dir, 'issuer.lock');
    writeFileSync(file, `${process.ppid} issuer serve\n`);
    await expect(lockDataDir(dir, 'tenant nonce')).rejects.toMatchObject({
      code: 'ERR_ISSUER_DATA_DIR_LOCKED',
      message: `the data dir ${dir} is in use by process ${process.ppid} (issuer serve)`,
      path: file,
    });
    writeFileSync(
      file,
      JSON.stringify({ pid: deadPid(), host: hostname(), createdAt: Date.now(), token: 'x', holder: 'issuer serve' }),
    );
    const lock = await lockDataDir(dir, 'tenant nonce');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ pid: process.pid, holder: 'tenant nonce' });
    await lock.release();
    expect(readdirSync(dir)).toEqual([]);
  });
});
