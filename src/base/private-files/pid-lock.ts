/**
 * One writer at a time: a pid lock file (the plugin cache's entries, the issuer's data dir).
 *
 * A lock file next to what it protects (never the data file itself: locking the data file broke kubelogin on Windows,
 * int128/kubelogin#1144). Taken by creating it exclusively (O_EXCL) with the owner's pid, host and time; a lock whose
 * owner is dead (same host) or that is older than `staleMs` is broken, under a second exclusive `<lock>.break` file so
 * two waiters never both break it and then both hold it.
 *
 * Built-ins come from process.getBuiltinModule, not `import`: an ESM import of a built-in builds its namespace,
 * which runs every lazy getter (fs.promises, streams, WebCrypto...) and loads many more internal modules on each
 * plugin start (docs/explanation/plugin-startup.md); this module is on the plugin's cache-hit path.
 */
import { readFdBoundedSync } from '../bounded-read.js';
import { CredentialsError, errno } from '../errors.js';
import { hostName, monotonicMs } from '../io.js';
import { randomHex, removeTemporaryFiles, unlinkQuietly } from './atomic-write.js';

const { closeSync, constants, fstatSync, openSync, statSync, writeFileSync } = process.getBuiltinModule('node:fs');

/** Codes of the errors of the plugin cache's lock: held by another process too long, or not readable/writable. */
export type LockErrorCode = 'ERR_PLUGIN_CACHE_LOCKED' | 'ERR_PLUGIN_CACHE_IO';

export interface LockOptions {
  /** Give up after this long (ms); 0: refuse a live holder at once. */
  timeoutMs: number;
  /** Retry first after this many ms, then back off exponentially to 100 ms (with jitter). */
  pollMs: number;
  /** A lock older than this is broken even if its owner looks alive (ms); Infinity: only a dead owner's is. */
  staleMs: number;
  now: () => Date;
  signal?: AbortSignal;
  /** Who takes the lock (`issuer serve`), written into it for the messages of whoever finds it taken. */
  holder?: string;
  /** Called once when the lock has been busy for a second, e.g. to tell the user what we wait for. */
  onWait?: (owner: LockOwner | undefined) => void;
  /** Called when a stale lock is broken. */
  onBreak?: (owner: LockOwner | undefined, reason: string) => void;
  /**
   * The file whose writers this lock serialises. A holder that dies while writing it leaves its lock behind (nothing
   * of a synchronous write, nor a process killed outright, releases it), so its temporary files can only be found
   * next to a stale lock: whoever breaks that lock removes them first, while it still keeps every other writer out.
   * Writers need not look for them (a directory listing per write).
   */
  protects?: string;
  /** The caller's error for a lock still held at the deadline. Default: ERR_PLUGIN_CACHE_LOCKED. */
  busyError?: (owner: LockOwner | undefined, file: string) => Error;
  /** The caller's error for a lock file that cannot be created or broken. Default: ERR_PLUGIN_CACHE_IO. */
  ioError?: (problem: string, file: string, cause: unknown) => Error;
}

/** What a lock file says. */
export interface LockOwner {
  pid: number;
  host: string;
  /** ms since the epoch. */
  createdAt: number;
  token: string;
  holder?: string;
}

/** A held lock. `release()` is idempotent and synchronous (usable from a signal handler). */
export interface HeldLock {
  readonly file: string;
  release(): void;
}

// Tokens of the locks this process holds, shared by every copy of this module in the process: a lock file naming our
// own pid with another token was left by an earlier process that had our pid (a container's pid 1 restarted).
const heldLocksKey = Symbol.for('clusterprofile-credentials.held-locks');
(globalThis as Record<symbol, unknown>)[heldLocksKey] ??= new Set<string>();
const held = (globalThis as Record<symbol, unknown>)[heldLocksKey] as Set<string>;

/**
 * Takes the lock at `file`, waiting up to `timeoutMs` for a live owner to release it; a stale lock is taken over.
 * Throws `busyError` (default `ERR_PLUGIN_CACHE_LOCKED`, naming the owner's pid) when the time is up.
 */
export async function acquireLock(file: string, options: LockOptions): Promise<HeldLock> {
  const started = monotonicMs();
  const deadline = started + options.timeoutMs;
  let told = false;
  let attempt = 0;
  for (;;) {
    const taken = tryCreate(file, options);
    if (taken !== undefined) return taken;
    const owner = readOwner(file);
    const staleReason = staleness(file, owner, options);
    if (staleReason !== undefined) {
      if (breakLock(file, owner, options)) {
        options.onBreak?.(owner, staleReason);
      } else {
        await sleep(options.pollMs); // someone else is breaking it
      }
      continue;
    }
    if (monotonicMs() >= deadline) {
      throw options.busyError === undefined
        ? cacheLockBusy(owner, file, options.timeoutMs)
        : options.busyError(owner, file);
    }
    if (!told && monotonicMs() - started > 1000) {
      told = true;
      options.onWait?.(owner);
    }
    options.signal?.throwIfAborted();
    // Back off (to ~100 ms) so a crowd of waiters does not starve the one process doing the work.
    attempt += 1;
    await sleep(
      Math.min(options.pollMs * 2 ** Math.min(attempt, 10), Math.max(options.pollMs, 100)) * (0.5 + Math.random()),
    );
  }
}

/** True when `file` is a lock held by a live owner (used by `clean` to leave it alone). */
export function isLockHeld(file: string, options: Pick<LockOptions, 'staleMs' | 'now'>): boolean {
  const owner = readOwner(file);
  return staleness(file, owner, options) === undefined;
}

function cacheLockBusy(owner: LockOwner | undefined, file: string, timeoutMs: number): CredentialsError<LockErrorCode> {
  const who = owner === undefined ? 'another process' : `process ${owner.pid} on ${owner.host}`;
  return new CredentialsError(
    'ERR_PLUGIN_CACHE_LOCKED',
    `timed out after ${timeoutMs} ms waiting for ${who} to release the cache lock ${file}`,
    {
      path: file,
      hint: `if no such process is running, remove the lock: rm '${file}'`,
    },
  );
}

function lockIoError(options: LockOptions, action: 'create' | 'break', file: string, cause: unknown): Error {
  if (options.ioError !== undefined)
    return options.ioError(action === 'create' ? 'cannot create the lock' : 'cannot break the stale lock', file, cause);
  const what = action === 'create' ? 'cannot create the cache lock' : 'cannot break the stale cache lock';
  return new CredentialsError<LockErrorCode>('ERR_PLUGIN_CACHE_IO', `${what} ${file}: ${(cause as Error).message}`, {
    path: file,
    cause,
  });
}

function tryCreate(file: string, options: LockOptions): HeldLock | undefined {
  const owner: LockOwner = {
    pid: process.pid,
    host: hostName(),
    createdAt: options.now().getTime(),
    token: randomHex(8),
    ...(options.holder === undefined ? {} : { holder: options.holder }),
  };
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
  } catch (error) {
    if (errno(error) === 'EEXIST') return undefined;
    throw lockIoError(options, 'create', file, error);
  }
  try {
    writeFileSync(fd, JSON.stringify(owner));
  } finally {
    closeSync(fd);
  }
  held.add(owner.token);
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      held.delete(owner.token);
      // Only remove the file if it is still ours (it may have been broken as stale and retaken meanwhile).
      if (readOwner(file)?.token === owner.token) unlinkQuietly(file);
    },
  };
}

/** The lock's owner: our JSON, or `<pid> <holder>` (the issuer's data-dir lock before it used this one). */
function readOwner(file: string): LockOwner | undefined {
  let text: string;
  let mtime: number;
  try {
    const fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
    try {
      mtime = fstatSync(fd).mtimeMs;
      text = readFdBoundedSync(fd, file, 4096);
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined; // gone, or not a lock we can read: judged by its age
  }
  try {
    const owner = JSON.parse(text) as Partial<LockOwner> | null;
    if (
      typeof owner?.pid === 'number' &&
      typeof owner.host === 'string' &&
      typeof owner.createdAt === 'number' &&
      typeof owner.token === 'string'
    ) {
      return owner as LockOwner;
    }
  } catch {
    // not ours: maybe the older form
  }
  const legacy = /^([1-9]\d*)(?: ([^\n]*))?\n?$/.exec(text);
  if (legacy !== null) {
    return {
      pid: Number(legacy[1]),
      host: hostName(),
      createdAt: mtime,
      token: '',
      ...(legacy[2] === undefined ? {} : { holder: legacy[2] }),
    };
  }
  // half-written (the owner died between create and write) or garbage: judged by the file's age
  return undefined;
}

function staleness(
  file: string,
  owner: LockOwner | undefined,
  options: Pick<LockOptions, 'staleMs' | 'now'>,
): string | undefined {
  const now = options.now().getTime();
  if (owner !== undefined) {
    if (owner.host === hostName()) {
      if (owner.pid === process.pid && !held.has(owner.token))
        return `its owner had this process's pid ${owner.pid} before`;
      if (!isAlive(owner.pid)) return `its owner, process ${owner.pid}, is gone`;
    }
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
function breakLock(file: string, seen: LockOwner | undefined, options: LockOptions): boolean {
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
    throw lockIoError(options, 'break', file, error);
  }
  closeSync(fd);
  try {
    const current = readOwner(file);
    if (current?.token !== seen?.token) return false;
    if (options.protects !== undefined) removeTemporaryFiles(options.protects);
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
