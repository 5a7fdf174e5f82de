/**
 * Replacing a file atomically: {@link writeFileAtomic} (async) and {@link writeFileAtomicSync} (with `durable: false`
 * for the plugin cache: nothing fsynced) write a temporary file next to the target, named by {@link temporaryPath},
 * and rename it over the target: readers see the old file or the new one, never a torn one. Temporary files left by
 * a writer that died are found by name ({@link isTemporaryOf}) and removed under the writers' lock.
 *
 * Built-ins come from process.getBuiltinModule, not `import`: an ESM import of a built-in builds its namespace,
 * which runs every lazy getter (fs.promises, streams, WebCrypto...) and loads many more internal modules on each
 * plugin start (docs/explanation/plugin-startup.md); this module is on the plugin's cache-hit path.
 */

const { closeSync, constants, fchmodSync, fsyncSync, openSync, readdirSync, renameSync, unlinkSync, writeFileSync } =
  process.getBuiltinModule('node:fs');
const { basename, dirname, join } = process.getBuiltinModule('node:path');

/** `bytes` random bytes as hex. node:crypto is loaded when first used (a write or a lock, never a cache hit). */
export const randomHex = (bytes: number): string =>
  process.getBuiltinModule('node:crypto').randomBytes(bytes).toString('hex');

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

/** Removes `file` if it is there (the pid lock's files too). */
export function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}
