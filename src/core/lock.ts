/**
 * A lock file per cache entry (`<key>.lock`, never the data file itself: locking the data file broke kubelogin on
 * Windows, int128/kubelogin#1144). Taken by creating it exclusively (O_EXCL) with the owner's pid, host and time;
 * a lock whose owner is dead (same host) or that is older than `staleMs` is broken, under a second exclusive
 * `<key>.lock.break` file so two waiters never both break it and then both hold it.
 */
import { CredentialsError, errno, type ErrorCodes } from './errors.js';

// Built-ins come from process.getBuiltinModule, not `import`: an ESM import of a built-in builds its namespace,
// which runs every lazy getter (fs.promises, streams, WebCrypto...) and loads ~30 more internal modules on each
// plugin start (see README.md, "The plugin runtime", "Start-up").
const { closeSync, constants, openSync, readFileSync, statSync, unlinkSync, writeSync } = process.getBuiltinModule('node:fs');
// Only a miss takes a lock: node:os is loaded then, not on a hit.
const hostname = (): string => process.getBuiltinModule('node:os').hostname();

/** Code of a lock that could not be taken in time (exit 1). */
export type LockErrorCode = ErrorCodes<'ERR_PLUGIN_CACHE_LOCKED' | 'ERR_PLUGIN_CACHE_IO'>;

export interface LockOptions {
  /** Give up after this long (ms). */
  timeoutMs: number;
  /** Retry first after this many ms, then back off exponentially to 100 ms (with jitter). */
  pollMs: number;
  /** A lock older than this is broken even if its owner looks alive (ms). */
  staleMs: number;
  now: () => Date;
  signal?: AbortSignal;
  /** Called once when the lock has been busy for a second, e.g. to tell the user what we wait for. */
  onWait?: (owner: LockOwner | undefined) => void;
  /** Called when a stale lock is broken. */
  onBreak?: (owner: LockOwner | undefined, reason: string) => void;
}

/** What a lock file says. */
export interface LockOwner {
  pid: number;
  host: string;
  /** ms since the epoch. */
  createdAt: number;
  token: string;
}

/** A held lock. `release()` is idempotent and synchronous (usable from a signal handler). */
export interface HeldLock {
  readonly file: string;
  release(): void;
}

/**
 * Takes the lock at `file`, waiting up to `timeoutMs`. Throws `ERR_PLUGIN_CACHE_LOCKED` with the owner's pid on
 * timeout.
 */
export async function acquireLock(file: string, options: LockOptions): Promise<HeldLock> {
  const started = performance.now();
  const deadline = started + options.timeoutMs;
  let told = false;
  let attempt = 0;
  for (;;) {
    const held = tryCreate(file, options.now());
    if (held !== undefined) return held;
    const owner = readOwner(file);
    const staleReason = staleness(file, owner, options);
    if (staleReason !== undefined) {
      if (breakLock(file, owner)) options.onBreak?.(owner, staleReason);
      continue;
    }
    if (performance.now() >= deadline) {
      const who = owner === undefined ? 'another process' : `process ${owner.pid} on ${owner.host}`;
      throw new CredentialsError('ERR_PLUGIN_CACHE_LOCKED', `timed out after ${options.timeoutMs} ms waiting for ${who} to release the cache lock ${file}`, {
        path: file,
        hint: `if no such process is running, remove the lock: rm '${file}'`,
      });
    }
    if (!told && performance.now() - started > 1000) {
      told = true;
      options.onWait?.(owner);
    }
    options.signal?.throwIfAborted();
    // Back off (to ~100 ms) so a crowd of waiters does not starve the one process doing the work.
    attempt += 1;
    await sleep(Math.min(options.pollMs * 2 ** Math.min(attempt, 10), Math.max(options.pollMs, 100)) * (0.5 + Math.random()));
  }
}

/** True when `file` is a lock held by a live owner (used by `clean` to leave it alone). */
export function isLockHeld(file: string, options: Pick<LockOptions, 'staleMs' | 'now'>): boolean {
  const owner = readOwner(file);
  return staleness(file, owner, options) === undefined;
}

function tryCreate(file: string, now: Date): HeldLock | undefined {
  const owner: LockOwner = { pid: process.pid, host: hostname(), createdAt: now.getTime(), token: process.getBuiltinModule('node:crypto').randomBytes(8).toString('hex') };
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
  } catch (error) {
    if (errno(error) === 'EEXIST') return undefined;
    throw new CredentialsError('ERR_PLUGIN_CACHE_IO', `cannot create the cache lock ${file}: ${(error as Error).message}`, { path: file, cause: error });
  }
  try {
    writeSync(fd, JSON.stringify(owner));
  } finally {
    closeSync(fd);
  }
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      // Only remove the file if it is still ours (it may have been broken as stale and retaken meanwhile).
      if (readOwner(file)?.token === owner.token) unlinkQuietly(file);
    },
  };
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockOwner>;
    if (typeof owner.pid === 'number' && typeof owner.host === 'string' && typeof owner.createdAt === 'number' && typeof owner.token === 'string') {
      return owner as LockOwner;
    }
  } catch {
    // missing, half-written (the owner died between create and write) or garbage: judged by the file's age
  }
  return undefined;
}

function staleness(file: string, owner: LockOwner | undefined, options: Pick<LockOptions, 'staleMs' | 'now'>): string | undefined {
  const now = options.now().getTime();
  if (owner !== undefined) {
    if (owner.host === hostname() && !isAlive(owner.pid)) return `its owner, process ${owner.pid}, is gone`;
    if (now - owner.createdAt > options.staleMs) return `it is older than ${options.staleMs} ms`;
    return undefined;
  }
  // Unreadable: a writer between create and write gets a grace second; after that it is debris.
  let age: number;
  try {
    age = now - statSync(file).mtimeMs;
  } catch {
    return undefined; // gone: the next create attempt decides
  }
  return age > Math.min(1000, options.staleMs) ? 'it is unreadable' : undefined;
}

/** Removes a stale lock unless someone else is already doing so or has retaken it since we looked. */
function breakLock(file: string, seen: LockOwner | undefined): boolean {
  const breaker = `${file}.break`;
  let fd: number;
  try {
    fd = openSync(breaker, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  } catch (error) {
    if (errno(error) === 'EEXIST') {
      // A breaker that died mid-break leaves this behind; it is only ever held for a few syscalls.
      try {
        if (Date.now() - statSync(breaker).mtimeMs > 5000) unlinkQuietly(breaker);
      } catch {
        // gone
      }
      return false;
    }
    throw new CredentialsError('ERR_PLUGIN_CACHE_IO', `cannot break the stale cache lock ${file}: ${(error as Error).message}`, { path: file, cause: error });
  }
  closeSync(fd);
  try {
    const current = readOwner(file);
    if (current?.token !== seen?.token) return false;
    unlinkQuietly(file);
    return true;
  } finally {
    unlinkQuietly(breaker);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errno(error) === 'EPERM';
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
