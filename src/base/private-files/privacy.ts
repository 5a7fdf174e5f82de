/**
 * Private files and directories: one set of rules for the plugin cache, the issuer's data dir, imported Identities,
 * key files and written kubeconfigs (with `atomic-write.ts` and `pid-lock.ts`, its neighbours in this folder).
 *
 * - Private: a directory owned by the user, a file the user's alone to read; no permission bit for group or others
 *   (`mode & 0o077`, {@link PRIVATE_MODE_MASK}). Not checked on Windows: it has no POSIX modes (Node reports
 *   0o666/0o777) and the profile's ACLs protect it.
 * - A private file is checked on the descriptor it is read from (the file checked is the file read), read with a
 *   bound.
 *
 * The checks return what is wrong instead of throwing: each caller reports it with its own code, message and hint.
 *
 * Built-ins come from process.getBuiltinModule, not `import`: an ESM import of a built-in builds its namespace,
 * which runs every lazy getter (fs.promises, streams, WebCrypto...) and loads many more internal modules on each
 * plugin start (docs/explanation/plugin-startup.md); this module is on the plugin's cache-hit path.
 */
import { readFdBoundedSync } from '../bounded-read.js';
import { errno } from '../errors.js';

const { closeSync, constants, fstatSync, mkdirSync, openSync, statSync } = process.getBuiltinModule('node:fs');

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
