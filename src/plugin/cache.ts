/**
 * The on-disk credential cache: one 0600 JSON file per identity in a 0700 directory owned by the user. Reads are
 * lock-free (writers replace files atomically); writes happen under the entry's lock (see lock.ts).
 *
 * Layout: `<dir>/<key>.json` (entry), `<dir>/<key>.lock` (lock), `<dir>/<key>.json.<random>.tmp` (a write in progress).
 */
import { CredentialsError, errno, type ErrorCodes } from '../core/errors.js';
import type { ExecCredentialStatus } from '../core/exec-credential.js';
import { parseTimestamp } from '../core/exec-credential.js';
import type { Env } from '../core/io.js';
import type { CachedCredential } from './provider.js';
import { sha256Hex } from '../core/sha256.js';
import { canonicalJson } from '../core/canonical-json.js';

// Built-ins come from process.getBuiltinModule, not `import`: an ESM import of a built-in builds its namespace,
// which runs every lazy getter (fs.promises, streams, WebCrypto...) and loads ~30 more internal modules on each
// plugin start (see README.md, "The plugin runtime", "Start-up").
const { closeSync, constants, fstatSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } =
  process.getBuiltinModule('node:fs');
const { join } = process.getBuiltinModule('node:path');

/** Codes of cache failures (exit 1). */
export type CacheErrorCode = ErrorCodes<'ERR_PLUGIN_CACHE_INSECURE' | 'ERR_PLUGIN_CACHE_IO'>;

const ENTRY_VERSION = 1;
const KEY_PATTERN = /^[0-9a-f]{64}\.(json|lock)$|^[0-9a-f]{64}\.json\.[0-9a-f]+\.tmp$/;

/**
 * The provider's cache directory: `--cache-dir` as given, else `$KUBECACHEDIR/clusterprofile/<provider>`, else
 * `~/.kube/cache/clusterprofile/<provider>`.
 */
export function cacheDirectory(
  providerName: string,
  flag: string | undefined,
  env: Env,
  home: () => string = () => process.getBuiltinModule('node:os').homedir(),
): string {
  if (flag !== undefined) return flag;
  const base = env['KUBECACHEDIR'] !== undefined && env['KUBECACHEDIR'] !== '' ? env['KUBECACHEDIR'] : join(home(), '.kube', 'cache');
  return join(base, 'clusterprofile', providerName);
}

/**
 * The cache key: SHA-256 (hex) of the provider name and the provider's identity inputs as canonical JSON (object keys
 * sorted, `undefined` dropped), so equal inputs always meet and any difference separates them.
 */
export function cacheKey(providerName: string, identity: unknown): string {
  return sha256Hex(canonicalJson(['clusterprofile-credentials cache v1', providerName, identity ?? null]));
}


/** What {@link readEntry} found. */
export type EntryRead<State> =
  | { kind: 'missing' }
  | { kind: 'corrupted'; reason: string }
  | { kind: 'entry'; entry: CachedCredential<State>; expiresAt: number };

/**
 * Reads `<dir>/<key>.json`. Throws `ERR_PLUGIN_CACHE_INSECURE` when the file can be read or written by group or
 * others, or is not the user's; reports an unparsable entry as `corrupted` rather than throwing.
 */
export function readEntry<State>(dir: string, key: string): EntryRead<State> {
  const file = entryPath(dir, key);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    if (errno(error) === 'ENOENT') return { kind: 'missing' };
    if (errno(error) === 'ELOOP') {
      throw insecure(file, 'is a symbolic link', `remove it: rm '${file}'`);
    }
    throw ioError(`cannot read the cache entry ${file}`, file, error);
  }
  let text: string;
  try {
    assertPrivate(fstatSync(fd), file, 'file');
    text = readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    return { kind: 'corrupted', reason: 'not JSON' };
  }
  const entry = document as { version?: unknown; key?: unknown; issuedAt?: unknown; status?: Partial<ExecCredentialStatus>; state?: unknown };
  if (typeof entry !== 'object' || entry === null || entry.version !== ENTRY_VERSION || entry.key !== key) {
    return { kind: 'corrupted', reason: 'not a cache entry of this version and key' };
  }
  const status = entry.status;
  const expiresAt = typeof status?.expirationTimestamp === 'string' ? parseTimestamp(status.expirationTimestamp) : undefined;
  if (typeof status !== 'object' || status === null || expiresAt === undefined || typeof entry.issuedAt !== 'string') {
    return { kind: 'corrupted', reason: 'no status with an expirationTimestamp' };
  }
  if (typeof status.token !== 'string' && (typeof status.clientCertificateData !== 'string' || typeof status.clientKeyData !== 'string')) {
    return { kind: 'corrupted', reason: 'neither a token nor a certificate and key' };
  }
  return {
    kind: 'entry',
    expiresAt,
    entry: { status: status as ExecCredentialStatus, issuedAt: entry.issuedAt, ...(entry.state === undefined ? {} : { state: entry.state as State }) },
  };
}

/**
 * Writes an entry atomically: a 0600 temporary file created exclusively, written, fsynced, renamed over the entry,
 * then the directory fsynced. A failure leaves the previous entry (or none), never a partial one. The caller holds
 * the entry's lock, so any other temporary file of this key is debris of a writer that died: it is removed.
 */
export function writeEntry<State>(dir: string, key: string, entry: CachedCredential<State>): void {
  const file = entryPath(dir, key);
  for (const name of readdirSync(dir)) {
    if (name.startsWith(`${key}.json.`) && name.endsWith('.tmp')) removeQuietly(join(dir, name));
  }
  const temporary = `${file}.${process.getBuiltinModule('node:crypto').randomBytes(6).toString('hex')}.tmp`;
  const body = `${JSON.stringify({ version: ENTRY_VERSION, key, issuedAt: entry.issuedAt, status: entry.status, ...(entry.state === undefined ? {} : { state: entry.state }) })}\n`;
  let fd: number | undefined;
  try {
    fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
    writeSync(fd, body);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temporary, file);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    removeQuietly(temporary);
    throw ioError(`cannot write the cache entry ${file}`, file, error);
  }
  syncDirectory(dir);
}

/** Removes an entry (a corrupted one, or before `clean`); a missing file is fine. */
export function removeEntry(dir: string, key: string): void {
  removeQuietly(entryPath(dir, key));
}

/**
 * Creates the directory (and parents) with mode 0700 if needed, then checks it: a directory, owned by the user,
 * with no group or other permissions. Throws `ERR_PLUGIN_CACHE_INSECURE` with a fix otherwise.
 */
export function ensurePrivateDirectory(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw ioError(`cannot create the cache directory ${dir}`, dir, error);
  }
  checkPrivateDirectory(dir);
}

/** Checks an existing directory as {@link ensurePrivateDirectory} does; false when it does not exist. */
export function checkPrivateDirectory(dir: string): boolean {
  let stats;
  try {
    stats = statSync(dir);
  } catch (error) {
    if (errno(error) === 'ENOENT') return false;
    throw ioError(`cannot inspect the cache directory ${dir}`, dir, error);
  }
  if (!stats.isDirectory()) {
    throw new CredentialsError('ERR_PLUGIN_CACHE_IO', `the cache directory ${dir} is not a directory`, {
      path: dir,
      hint: 'point --cache-dir at a directory',
    });
  }
  assertPrivate(stats, dir, 'directory');
  return true;
}

/**
 * Removes every cache entry, lock file not held by a live plugin and leftover temporary file from `dir`; returns how
 * many entries it removed. Works on a directory with unsafe permissions too: removing exposed secrets is the point.
 */
export function cleanDirectory(dir: string, isLockHeld: (file: string) => boolean): { entries: number; skippedLocks: number } {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if (errno(error) === 'ENOENT') return { entries: 0, skippedLocks: 0 };
    throw ioError(`cannot list the cache directory ${dir}`, dir, error);
  }
  let entries = 0;
  let skippedLocks = 0;
  for (const name of names) {
    if (!KEY_PATTERN.test(name)) continue;
    const file = join(dir, name);
    if (name.endsWith('.lock') && isLockHeld(file)) {
      skippedLocks += 1;
      continue;
    }
    try {
      unlinkSync(file);
      if (name.endsWith('.json')) entries += 1;
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw ioError(`cannot remove ${file}`, file, error);
    }
  }
  return { entries, skippedLocks };
}

export function entryPath(dir: string, key: string): string {
  return join(dir, `${key}.json`);
}

export function lockPath(dir: string, key: string): string {
  return join(dir, `${key}.lock`);
}

function assertPrivate(stats: { mode: number; uid: number }, path: string, what: 'file' | 'directory'): void {
  // Windows has no POSIX modes (Node reports 0o666/0o777); there the user profile's ACLs protect ~/.kube/cache.
  if (process.platform === 'win32') return;
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid) {
    throw insecure(path, `is owned by uid ${stats.uid}, not by you (uid ${uid})`, `use a cache directory of your own (--cache-dir)`);
  }
  if ((stats.mode & 0o077) !== 0) {
    const mode = (stats.mode & 0o777).toString(8).padStart(3, '0');
    throw insecure(
      path,
      `is accessible by group or others (mode ${mode})`,
      `chmod ${what === 'directory' ? '700' : '600'} '${path}'`,
    );
  }
}

function insecure(path: string, problem: string, fix: string): CredentialsError {
  return new CredentialsError('ERR_PLUGIN_CACHE_INSECURE', `refusing to use the credential cache: ${path} ${problem}`, {
    path,
    hint: fix,
  });
}

function ioError(message: string, path: string, cause: unknown): CredentialsError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new CredentialsError('ERR_PLUGIN_CACHE_IO', `${message}: ${detail}`, { path, cause });
}

function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY);
    fsyncSync(fd);
  } catch {
    // Not every file system lets a directory be fsynced; the rename is atomic regardless.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}
