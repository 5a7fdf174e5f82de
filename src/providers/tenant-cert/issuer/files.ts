/**
 * Crash-safe files for the issuer's data dir: a file is replaced whole or not at all (temporary file in the same
 * directory, fsync, rename, fsync of the directory), private files are 0600 and directories 0700, and an exclusive
 * lock file keeps two writers of the same data dir apart.
 */
import { mkdir, open, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic as writeAtomically } from '../../../core/atomic-file.js';
import { CredentialsError, isCredentialsError } from '../../../core/errors.js';

function dataDirError(message: string, path: string, cause?: unknown): CredentialsError {
  return new CredentialsError('ERR_ISSUER_DATA_DIR', message, { path, ...(cause === undefined ? {} : { cause }) });
}

/** Creates `dir` (and parents) with mode 0700; refuses an existing one that group or others can access. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const info = await stat(dir);
    if (!info.isDirectory()) {
      throw dataDirError(`${dir} is not a directory`, dir);
    }
    const uid = process.getuid?.();
    if (uid !== undefined && info.uid !== uid) {
      throw new CredentialsError('ERR_ISSUER_DATA_DIR', `${dir} is owned by uid ${info.uid}, not by the issuer's user (uid ${uid})`, {
        path: dir,
        hint: `whoever owns it can replace trust records and CA keys: chown ${uid} ${dir}, or use a data dir of the issuer's user`,
      });
    }
    if ((info.mode & 0o077) !== 0) {
      throw new CredentialsError('ERR_ISSUER_DATA_DIR', `${dir} is accessible by other users (mode ${(info.mode & 0o777).toString(8)})`, {
        path: dir,
        hint: `chmod 700 ${dir}`,
      });
    }
  } catch (error) {
    if (isCredentialsError(error)) {
      throw error;
    }
    throw dataDirError(`cannot create ${dir}: ${(error as Error).message}`, dir, error);
  }
}

/** Replaces `file` atomically and durably with `data` (mode `mode`, default 0600); a failure is ERR_ISSUER_DATA_DIR. */
export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  try {
    await writeAtomically(file, data, mode);
  } catch (error) {
    throw dataDirError(`cannot write ${file}: ${(error as Error).message}`, file, error);
  }
}

/** The file's text, or undefined when it does not exist. */
export async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return undefined;
    }
    throw dataDirError(`cannot read ${file}: ${(error as Error).message}`, file, error);
  }
}

export interface DataDirLock {
  release(): Promise<void>;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes `DIR/issuer.lock` (created exclusively, holding our pid). A lock left by a process that no longer exists is
 * taken over; a live holder → ERR_ISSUER_DATA_DIR_LOCKED.
 */
export async function lockDataDir(dir: string, holder: string): Promise<DataDirLock> {
  const file = join(dir, 'issuer.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const handle = await open(file, 'wx', 0o600);
      await handle.writeFile(`${process.pid} ${holder}\n`);
      await handle.close();
      let released = false;
      return {
        async release() {
          if (!released) {
            released = true;
            await unlink(file).catch(() => undefined);
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw dataDirError(`cannot lock ${dir}: ${(error as Error).message}`, file, error);
      }
      const content = (await readOptional(file)) ?? '';
      const pid = Number.parseInt(content, 10);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new CredentialsError('ERR_ISSUER_DATA_DIR_LOCKED', `the data dir ${dir} is in use by process ${pid} (${content.trim().split(' ').slice(1).join(' ')})`, {
          path: file,
          hint: 'stop that process, or use the running issuer\'s HTTPS API (POST /v1/nonces, POST /v1/tenants)',
        });
      }
      // Stale (holder gone or torn file): remove and retry.
      await unlink(file).catch(() => undefined);
    }
  }
  throw new CredentialsError('ERR_ISSUER_DATA_DIR_LOCKED', `cannot lock the data dir ${dir}`, { path: file });
}
