/**
 * The one way this package replaces a file that holds a secret or state (an Identity, a kubeconfig with a client key,
 * issuer state): the data goes to a fresh temporary file in the same directory (created exclusively with `mode`, so
 * never readable by others even for a moment), is fsynced, renamed over the target, and the directory is fsynced.
 * Readers see the old file or the new one, never a torn one; a failure removes the temporary file and rethrows the
 * underlying error for the caller to translate into its own coded error. (The plugin cache has a synchronous twin in
 * src/plugin/cache.ts: its hit path must not load fs/promises.)
 */
import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Replaces `file` atomically and durably with `data` (mode `mode`, default 0600). */
export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const temp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.writeFile(data);
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
    await syncDirectory(dirname(file));
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}
