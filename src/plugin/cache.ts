/**
 * The on-disk credential cache: one 0600 JSON file per identity in a 0700 directory owned by the user. Reads are
 * lock-free (writers replace files atomically); writes happen under the entry's lock (core/private-files/: privacy.ts,
 * atomic-write.ts, pid-lock.ts).
 *
 * Layout: `<dir>/<key>.json` (entry), `<dir>/<key>.lock` (lock), `<dir>/<key>.json.<random>.tmp` (a write in progress).
 */
import { CredentialsError, errno, type ErrorCodes } from '../base/errors.js';
import type { ExecCredentialStatus } from '../base/exec-credential.js';
import { parseTimestamp } from '../base/exec-credential.js';
import { homeDirectory, type Env } from '../base/io.js';
import type { CachedCredential } from './provider.js';
import { sha256Hex } from '../base/sha256.js';
import { canonicalJson } from '../base/canonical-json.js';
import { removeTemporaryFiles, writeFileAtomicSync } from '../base/private-files/atomic-write.js';
import {
  checkPrivateDirectory as privateDirectoryProblem,
  readPrivateFile,
  type PrivacyProblem,
} from '../base/private-files/privacy.js';

// Built-ins come from process.getBuiltinModule, not `import`: an ESM import of a built-in builds its namespace,
// which runs every lazy getter (fs.promises, streams, WebCrypto...) and loads ~30 more internal modules on each
// plugin start (docs/explanation/plugin-startup.md).
const { readdirSync, unlinkSync } = process.getBuiltinModule('node:fs');
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
  home: () => string = homeDirectory,
): string {
  if (flag !== undefined) return flag;
  if (env['KUBECACHEDIR'] !== undefined && env['KUBECACHEDIR'] !== '')
    return join(env['KUBECACHEDIR'], 'clusterprofile', providerName);
  let homeDir: string;
  try {
    homeDir = home();
  } catch {
    // No HOME and no passwd entry: a container built FROM scratch or distroless without a user database.
    throw new CredentialsError(
      'ERR_PLUGIN_CACHE_IO',
      'no cache directory: --cache-dir is not given, KUBECACHEDIR is not set and there is no home directory',
      {
        path: '--cache-dir',
        hint: 'give --cache-dir DIR or set KUBECACHEDIR (in a pod: a writable emptyDir)',
      },
    );
  }
  return join(homeDir, '.kube', 'cache', 'clusterprofile', providerName);
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
  const read = readPrivateFile(file, { followSymlinks: false });
  if ('problem' in read) {
    if (read.problem.kind === 'missing') return { kind: 'missing' };
    if (read.problem.kind === 'io' && errno(read.problem.cause) === 'EFBIG')
      return { kind: 'corrupted', reason: 'larger than 1 MiB' };
    throw problemError(read.problem, file, 'file');
  }
  const text = read.text;
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    return { kind: 'corrupted', reason: 'not JSON' };
  }
  const entry = document as {
    version?: unknown;
    key?: unknown;
    issuedAt?: unknown;
    status?: Partial<ExecCredentialStatus>;
    state?: unknown;
  };
  if (typeof entry !== 'object' || entry === null || entry.version !== ENTRY_VERSION || entry.key !== key) {
    return { kind: 'corrupted', reason: 'not a cache entry of this version and key' };
  }
  const status = entry.status;
  const expiresAt =
    typeof status?.expirationTimestamp === 'string' ? parseTimestamp(status.expirationTimestamp) : undefined;
  if (typeof status !== 'object' || status === null || expiresAt === undefined || typeof entry.issuedAt !== 'string') {
    return { kind: 'corrupted', reason: 'no status with an expirationTimestamp' };
  }
  if (
    typeof status.token !== 'string' &&
    (typeof status.clientCertificateData !== 'string' || typeof status.clientKeyData !== 'string')
  ) {
    return { kind: 'corrupted', reason: 'neither a token nor a certificate and key' };
  }
  return {
    kind: 'entry',
    expiresAt,
    entry: {
      status: status as ExecCredentialStatus,
      issuedAt: entry.issuedAt,
      ...(entry.state === undefined ? {} : { state: entry.state as State }),
    },
  };
}

/**
 * Writes an entry atomically: a 0600 temporary file created exclusively, written and renamed over the entry
 * (base/private-files/atomic-write.ts, writeFileAtomicSync). Readers and a process that crashes see the previous
 * entry or the new one. Nothing is fsynced: an entry is a copy of a credential that can be obtained again, and
 * {@link readEntry} rejects anything that is not a whole entry of its key, so the worst a power loss can leave under
 * the name — the previous entry, none, or an empty or partial file — costs one new issuance (a partial one is
 * reported, removed and replaced). An fsync cost each miss a thread-pool start and a disk flush (up to tens of ms on a busy disk).
 *
 * The caller holds the entry's lock. With `removeDebris` (the default) any other temporary file of this key is taken
 * for debris of a writer that died and removed, at the cost of listing the directory; a caller whose lock was taken
 * with `protects: entryPath(dir, key)` passes false, as breaking a dead writer's lock already removed its debris.
 */
export async function writeEntry<State>(
  dir: string,
  key: string,
  entry: CachedCredential<State>,
  options: { removeDebris?: boolean } = {},
): Promise<void> {
  const file = entryPath(dir, key);
  const body = `${JSON.stringify({ version: ENTRY_VERSION, key, issuedAt: entry.issuedAt, status: entry.status, ...(entry.state === undefined ? {} : { state: entry.state }) })}\n`;
  try {
    if (options.removeDebris !== false) removeTemporaryFiles(file);
    writeFileAtomicSync(file, body, 0o600, { durable: false });
  } catch (error) {
    throw ioError(`cannot write the cache entry ${file}`, file, error);
  }
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
  const problem = privateDirectoryProblem(dir, { create: true });
  if (problem !== undefined) throw problemError(problem, dir, 'directory');
}

/** Checks an existing directory as {@link ensurePrivateDirectory} does; false when it does not exist. */
export function checkPrivateDirectory(dir: string): boolean {
  const problem = privateDirectoryProblem(dir);
  if (problem?.kind === 'missing') return false;
  if (problem !== undefined) throw problemError(problem, dir, 'directory');
  return true;
}

/**
 * Removes every cache entry, lock file not held by a live plugin and leftover temporary file from `dir`; returns how
 * many entries it removed. Works on a directory with unsafe permissions too: removing exposed secrets is the point.
 */
export function cleanDirectory(
  dir: string,
  isLockHeld: (file: string) => boolean,
): { entries: number; skippedLocks: number } {
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

/** The cache's error for what keeps `path` from being a private cache directory or entry. */
function problemError(problem: PrivacyProblem, path: string, what: 'file' | 'directory'): CredentialsError {
  switch (problem.kind) {
    case 'owner':
      return insecure(
        path,
        `is owned by uid ${problem.uid}, not by you (uid ${problem.user})`,
        `use a cache directory of your own (--cache-dir)`,
      );
    case 'mode':
      return insecure(
        path,
        `is accessible by group or others (mode ${problem.mode.toString(8).padStart(3, '0')})`,
        `chmod ${what === 'directory' ? '700' : '600'} '${path}'`,
      );
    case 'symlink':
      return insecure(path, 'is a symbolic link', `remove it: rm '${path}'`);
    case 'type':
      if (what === 'directory') {
        return new CredentialsError('ERR_PLUGIN_CACHE_IO', `the cache directory ${path} is not a directory`, {
          path,
          hint: 'point --cache-dir at a directory',
        });
      }
      return new CredentialsError('ERR_PLUGIN_CACHE_IO', `the cache entry ${path} is not a regular file`, {
        path,
        hint: `remove it: rm -r '${path}'`,
      });
    case 'missing':
      return new CredentialsError(
        'ERR_PLUGIN_CACHE_IO',
        `the cache ${what === 'directory' ? 'directory' : 'entry'} ${path} disappeared`,
        { path },
      );
    case 'io': {
      const action =
        problem.operation === 'create'
          ? 'cannot create'
          : problem.operation === 'inspect'
            ? 'cannot inspect'
            : 'cannot read';
      return ioError(
        `${action} the cache ${what === 'directory' ? 'directory' : 'entry'} ${path}`,
        path,
        problem.cause,
      );
    }
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

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}
