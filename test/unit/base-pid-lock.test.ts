import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireLock, isLockHeld } from '../../src/base/private-files/pid-lock.js';

const now = () => new Date('2030-01-01T00:00:00Z');
const options = { timeoutMs: 150, pollMs: 5, staleMs: 60_000, now };

function lockFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'cpc-lock-unit-')), 'k.lock');
}

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

describe('acquireLock', () => {
  it('is exclusive: a second taker times out with the owner in the message, then gets it after release', async () => {
    const file = lockFile();
    const held = await acquireLock(file, options);
    expect(isLockHeld(file, options)).toBe(true);
    await expect(acquireLock(file, options)).rejects.toMatchObject({
      code: 'ERR_PLUGIN_CACHE_LOCKED',
      message: expect.stringContaining(`waiting for process ${process.pid} on ${hostname()}`),
      path: file,
      hint: `if no such process is running, remove the lock: rm '${file}'`,
    });
    held.release();
    expect(existsSync(file)).toBe(false);
    const again = await acquireLock(file, options);
    again.release();
    again.release(); // idempotent
  });

  it('breaks the lock of a process that is gone, and says whose it was', async () => {
    const file = lockFile();
    const pid = deadPid();
    writeFileSync(file, JSON.stringify({ pid, host: hostname(), createdAt: now().getTime(), token: 'old' }));
    const broken: string[] = [];
    const held = await acquireLock(file, {
      ...options,
      onBreak: (owner, reason) => broken.push(`${owner?.pid}: ${reason}`),
    });
    expect(broken).toEqual([`${pid}: its owner, process ${pid}, is gone`]);
    held.release();
    expect(readdirSync(join(file, '..'))).toEqual([]); // no .break file left either
  });

  it('breaks a lock older than staleMs even if its owner looks alive (another host, clock frozen)', async () => {
    const file = lockFile();
    writeFileSync(
      file,
      JSON.stringify({ pid: 1, host: 'elsewhere', createdAt: now().getTime() - 61_000, token: 'old' }),
    );
    const held = await acquireLock(file, options);
    held.release();
    writeFileSync(
      file,
      JSON.stringify({ pid: 1, host: 'elsewhere', createdAt: now().getTime() - 1_000, token: 'young' }),
    );
    await expect(acquireLock(file, options)).rejects.toMatchObject({ code: 'ERR_PLUGIN_CACHE_LOCKED' });
  });

  it('does not release a lock that was broken and retaken by someone else', async () => {
    const file = lockFile();
    const held = await acquireLock(file, options);
    writeFileSync(
      file,
      JSON.stringify({ pid: process.pid, host: hostname(), createdAt: now().getTime(), token: 'someone-else' }),
    );
    held.release();
    expect(existsSync(file)).toBe(true);
  });

  it('stops waiting when aborted', async () => {
    const file = lockFile();
    const held = await acquireLock(file, options);
    const controller = new AbortController();
    const waiting = acquireLock(file, { ...options, timeoutMs: 10_000, signal: controller.signal });
    controller.abort(new Error('interrupted'));
    await expect(waiting).rejects.toThrow('interrupted');
    held.release();
  });
});
