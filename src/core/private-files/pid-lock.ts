/**
 * Files that hold secrets or state, and the directories they live in: one set of rules for the plugin cache, the
 * issuer's data dir, imported Identities, key files and written kubeconfigs.
 *
 * - Private: a directory owned by the user, a file the user's alone to read; no permission bit for group or others
 *   (`mode & 0o077`, {@link PRIVATE_MODE_MASK}). Not checked on Windows: it has no POSIX modes (Node reports
 *   0o666/0o777) and the profile's ACLs protect it.
 * - Replaced atomically: {@link writeFileAtomic} (async) and {@link writeFileAtomicSync} (with `durable: false` for the
 *   plugin cache: nothing fsynced) write a temporary file next to the target, named by {@link temporaryPath}.
 * - One writer at a time: a pid lock file ({@link acquireLock}).
 *
 * The checks return what is wrong instead of throwing: each caller reports it with its own code, message and hint.
 *
 * Built-ins come from process.getBuiltinModule, not `import`: an ESM import of a built-in builds its namespace,
 * which runs every lazy getter (fs.promises, streams, WebCrypto...) and loads ~30 more internal modules on each
 * plugin start (docs/plugin-runtime.md, "Start-up"); this module is on the plugin's cache-hit path.
 */
import { readFdBoundedSync } from './bounded-read.js';
import { CredentialsError, errno } from './errors.js';
import { hostName, monotonicMs } from './io.js';

const {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} = process.getBuiltinModule('node:fs');
const { basename, dirname, join } = process.getBuiltinModule('node:path');
// Loaded when first used (a write or a lock, never a cache hit).
const randomHex = (bytes: number): string => process.getBuiltinModule('node:crypto').randomBytes(bytes).toString('hex');

/** The permission bits a private file or directory must not have: any for group or others. */
export const PRIVATE_MODE_MASK = 0o077;

/** What keeps a path from being a private file or directory. */
export type PrivacyProblem =
  | { kind: 'missing' }
  /** The file system refused (`operation` failed with `cause`, e.g. EACCES, ENOTDIR). */
  | { kind: 'io'; operation: 'create' | 'inspect' | 'read'; cause: unknown }
  /** A symbolic link where none is allowed ({@link ReadPrivateFileOptions.followSymlinks} false). */
  | { kind: 'symlink' }
  /** Not of the expected type: `found` is what it is instead. */
  | { kind: 'type'; expected: 'file' | 'directory'; found: 'file' | 'directory' | 'other' }
  /** Owned by `uid`, not by the user (`user`). */
  | { kind: 'owner'; uid: number; user: number }
  /** Group or others have permission bits; `mode` is `st_mode & 0o777`; with `groupReadOnly`, the file's owner and group. */
  | { kind: 'mode'; mode: number; uid?: number; gid?: number };

interface Stats {
  mode: number;
  uid: number;
  gid?: number;
  isFile(): boolean;
  isDirectory(): boolean;
}

/**
 * Whether `stats` is a file mounted read-only for this process's group: what the kubelet makes of a Secret volume
 * with `defaultMode: 0440` (or 0040) and the pod's `fsGroup` — owned by root (or by this process's user), its group
 * one of this process's groups (never group 0, which every process of some platforms has), read for owner and group
 * only, no write or execute bit for anyone.
 */
function readOnlyForOurGroup(stats: Stats): boolean {
  const mode = stats.mode & 0o777;
  if ((mode & ~0o440) !== 0 || (mode & 0o040) === 0) return false;
  if (stats.uid !== 0 && stats.uid !== process.getuid?.()) return false;
  const gid = stats.gid;
  if (gid === undefined || gid === 0) return false;
  return gid === process.getegid?.() || (process.getgroups?.() ?? []).includes(gid);
}

/**
 * What makes `stats` not a private `expected` (a regular file, or a directory); undefined when it is one. The owner
 * is checked unless `owner` is false. `groupReadOnly`: a file for reading only (a key we never write) may also be
 * read-only for a group of this process ({@link readOnlyForOurGroup}: a Secret volume with `fsGroup`).
 */
export function privacyProblem(
  stats: Stats,
  expected: 'file' | 'directory',
  options: { owner?: boolean; groupReadOnly?: boolean } = {},
): PrivacyProblem | undefined {
  const found = stats.isDirectory() ? 'directory' : stats.isFile() ? 'file' : 'other';
  if (found !== expected) return { kind: 'type', expected, found };
  if (process.platform === 'win32') return undefined;
  const user = process.getuid?.();
  if (options.owner !== false && user !== undefined && stats.uid !== user)
    return { kind: 'owner', uid: stats.uid, user };
  if ((stats.mode & PRIVATE_MODE_MASK) !== 0) {
    if (options.groupReadOnly !== true) return { kind: 'mode', mode: stats.mode & 0o777 };
    if (expected === 'file' && readOnlyForOurGroup(stats)) return undefined;
    // Owner and group decide the group rule: the caller's message names them.
    return {
      kind: 'mode',
      mode: stats.mode & 0o777,
      uid: stats.uid,
      ...(stats.gid === undefined ? {} : { gid: stats.gid }),
    };
  }
  return undefined;
}

/**
 * Checks that `dir` is a private directory: a directory, owned by the user, no group or other permission bits. With
 * `create`, makes it first (and its parents) with mode 0700; an existing one is checked, never chmod-ed.
 */
export function checkPrivateDirectory(dir: string, options: { create?: boolean } = {}): PrivacyProblem | undefined {
  if (options.create === true) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (cause) {
      // EEXIST: something that is not a directory is in the way; reported below.
      if (errno(cause) !== 'EEXIST') return { kind: 'io', operation: 'create', cause };
    }
  }
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(dir);
  } catch (cause) {
    return errno(cause) === 'ENOENT' ? { kind: 'missing' } : { kind: 'io', operation: 'inspect', cause };
  }
  return privacyProblem(stats, 'directory');
}

export interface ReadPrivateFileOptions {
  /** Default true: Kubernetes mounts Secrets through symbolic links. False refuses a link (`kind: 'symlink'`). */
  followSymlinks?: boolean;
  /** Default true. False for a file we only read that may be provisioned for us by another user (a mounted key). */
  owner?: boolean;
  /**
   * Default false. True for a file we only read (a key): also accept it read-only for one of this process's groups,
   * owned by root or by us — a Secret volume with `defaultMode: 0440` and `fsGroup`.
   */
  groupReadOnly?: boolean;
  /** Read at most this many bytes; a larger file is `io` with an EFBIG error. Default 1 MiB. */
  maxBytes?: number;
}

/**
 * Reads a private file: opened, checked on the open descriptor (so the file checked is the file read), read with a
 * bound. Returns its text, or what is wrong with it.
 */
export function readPrivateFile(
  file: string,
  options: ReadPrivateFileOptions = {},
): { text: string } | { problem: PrivacyProblem } {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (options.followSymlinks === false ? (constants.O_NOFOLLOW ?? 0) : 0));
  } catch (cause) {
    if (errno(cause) === 'ENOENT') return { problem: { kind: 'missing' } };
    if (errno(cause) === 'ELOOP' && options.followSymlinks === false) return { problem: { kind: 'symlink' } };
    return { problem: { kind: 'io', operation: 'read', cause } };
  }
  try {
    const problem = privacyProblem(fstatSync(fd), 'file', options);
    if (problem !== undefined) return { problem };
    return { text: readFdBoundedSync(fd, file, options.maxBytes ?? 1 << 20) };
  } catch (cause) {
    return { problem: { kind: 'io', operation: 'read', cause } };
  } finally {
    closeSync(fd);
  }
}

// --- Atomic replacement ---------------------------------------------------------------------------------------------

const TEMPORARY = /^\.[0-9a-f]+\.tmp$/;

/**
 * Where a new version of `file` is written before it is renamed over it: `<file>.<random hex>.tmp`, in the same
 * directory (a rename is atomic only within one file system).
 */
export function temporaryPath(file: string): string {
  return `${file}.${randomHex(6)}.tmp`;
}

/** True when `name` (a directory entry) is a temporary file of the file named `target` in that directory. */
export function isTemporaryOf(name: string, target: string): boolean {
  return name.startsWith(target) && TEMPORARY.test(name.slice(target.length));
}

/**
 * Removes temporary files of `file` left by writers that died. Only for a caller that holds a lock serialising all
 * writers of `file`: without one, they may be another writer's work in progress.
 */
export function removeTemporaryFiles(file: string): void {
  const dir = dirname(file);
  const target = basename(file);
  for (const name of readdirSync(dir)) {
    if (isTemporaryOf(name, target)) unlinkQuietly(join(dir, name));
  }
}

/**
 * Replaces `file` atomically and durably with `data`: a fresh temporary file ({@link temporaryPath}) created
 * exclusively with `mode` (never readable by others, even for a moment), written, chmod-ed to `mode` (the umask can
 * only remove bits), fsynced, renamed over `file`; then the directory is fsynced. Readers see the old file or the new
 * one, never a torn one. A failure removes the temporary file and rethrows the file system's error for the caller to
 * translate into its own coded error.
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const { open, rename, unlink } = process.getBuiltinModule('node:fs/promises');
  const temporary = temporaryPath(file);
  try {
    const handle = await open(
      temporary,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0),
      mode,
    );
    try {
      await handle.writeFile(data);
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  syncDirectory(dirname(file));
}

/**
 * {@link writeFileAtomic}, synchronous: the same temporary name, steps and cleanup. `syncDirectory: false` skips the
 * directory's fsync (the rename may be lost with the power, not the content). `durable: false` skips every fsync, for
 * a file that is only a copy of something obtainable again and whose readers reject anything that is not a whole
 * file of theirs (the plugin cache): readers, and a process that crashes at any point, still see the old file or the
 * new one (the rename is atomic); only a power loss may leave the old file, none, or an empty or partial new one
 * under the name. Each step is a few microseconds: cheaper in line than as a round trip to libuv's thread pool.
 */
export function writeFileAtomicSync(
  file: string,
  data: string | Uint8Array,
  mode = 0o600,
  options: { syncDirectory?: boolean; durable?: boolean } = {},
): void {
  const durable = options.durable !== false;
  const temporary = temporaryPath(file);
  let fd: number | undefined;
  try {
    fd = openSync(
      temporary,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0),
      mode,
    );
    writeFileSync(fd, data);
    fchmodSync(fd, mode);
    if (durable) fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temporary, file);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    unlinkQuietly(temporary);
    throw error;
  }
  if (durable && options.syncDirectory !== false) syncDirectory(dirname(file));
}

function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY);
    fsyncSync(fd);
  } catch {
    // Not every file system (nor Windows) lets a directory be fsynced; the rename is atomic regardless.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

// --- The pid lock ---------------------------------------------------------------------------------------------------
//
// A lock file next to what it protects (never the data file itself: locking the data file broke kubelogin on Windows,
// int128/kubelogin#1144). Taken by creating it exclusively (O_EXCL) with the owner's pid, host and time; a lock whose
// owner is dead (same host) or that is older than `staleMs` is broken, under a second exclusive `<lock>.break` file so
// two waiters never both break it and then both hold it.

/** Codes of the default errors of {@link acquireLock} (the plugin cache's). */
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
