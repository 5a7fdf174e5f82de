/**
 * Crash-safe files for the issuer's data dir: a file is replaced whole or not at all (temporary file in the same
 * directory, fsync, rename, fsync of the directory), private files are 0600 and directories 0700, and an exclusive
 * lock file keeps two writers of the same data dir apart. The rules are the core's (core/private-files/); this
 * module gives their failures the issuer's codes.
 */
import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic as writeAtomically } from '../../../base/private-files/atomic-write.js';
import { acquireLock } from '../../../base/private-files/pid-lock.js';
import { checkPrivateDirectory } from '../../../base/private-files/privacy.js';
import { CredentialsError } from '../../../base/errors.js';

function dataDirError(message: string, path: string, cause?: unknown): CredentialsError {
  return new CredentialsError('ERR_ISSUER_DATA_DIR', message, { path, ...(cause === undefined ? {} : { cause }) });
}

/** Creates `dir` (and parents) with mode 0700; refuses an existing one that is not the issuer's alone. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  const problem = checkPrivateDirectory(dir, { create: true });
  switch (problem?.kind) {
    case undefined:
      return;
    case 'type':
      throw dataDirError(`${dir} is not a directory`, dir);
    case 'owner':
      throw new CredentialsError(
        'ERR_ISSUER_DATA_DIR',
        `${dir} is owned by uid ${problem.uid}, not by the issuer's user (uid ${problem.user})`,
        {
          path: dir,
          hint: `whoever owns it can replace trust records and CA keys: chown ${problem.user} ${dir}, or use a data dir of the issuer's user`,
        },
      );
    case 'mode':
      throw new CredentialsError(
        'ERR_ISSUER_DATA_DIR',
        `${dir} is accessible by other users (mode ${problem.mode.toString(8)})`,
        {
          path: dir,
          hint: `chmod 700 ${dir}`,
        },
      );
    case 'io':
      throw dataDirError(`cannot create ${dir}: ${(problem.cause as Error).message}`, dir, problem.cause);
    default:
      throw dataDirError(`cannot create ${dir}`, dir);
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
  /**
   * Readiness: resolves while the lock file is still the one this process wrote and the data dir is writable;
   * ERR_ISSUER_DATA_DIR otherwise (someone removed or took over the lock, the volume went read-only or away).
   */
  check(): Promise<void>;
}

/**
 * Takes `DIR/issuer.lock` (the core's pid lock, naming `holder`). A lock left by a process that no longer exists is
 * taken over; a live holder → ERR_ISSUER_DATA_DIR_LOCKED at once, naming its pid.
 */
export async function lockDataDir(dir: string, holder: string): Promise<DataDirLock> {
  const file = join(dir, 'issuer.lock');
  const lock = await acquireLock(file, {
    timeoutMs: 0,
    pollMs: 10,
    // `issuer serve` holds it for as long as it runs: only a dead holder's lock is stale.
    staleMs: Number.POSITIVE_INFINITY,
    now: () => new Date(),
    holder,
    busyError: (owner) =>
      new CredentialsError(
        'ERR_ISSUER_DATA_DIR_LOCKED',
        owner === undefined
          ? `the data dir ${dir} is in use by another process`
          : `the data dir ${dir} is in use by process ${owner.pid}${owner.holder === undefined ? '' : ` (${owner.holder})`}`,
        {
          path: file,
          hint: "stop that process, or use the running issuer's HTTPS API (POST /v1/nonces, POST /v1/tenants)",
        },
      ),
    ioError: (problem, path, cause) =>
      dataDirError(`cannot lock ${dir}: ${problem}: ${(cause as Error).message}`, path, cause),
  });
  const ours = await readFile(file, 'utf8').catch(() => undefined);
  return {
    async release() {
      lock.release();
    },
    async check() {
      const now = await readFile(file, 'utf8').catch((error: unknown) => {
        throw (error as NodeJS.ErrnoException).code === 'ENOENT'
          ? dataDirError(`the lock ${file} was removed: this process no longer holds the data dir`, file)
          : dataDirError(`cannot read the lock ${file}: ${(error as Error).message}`, file, error);
      });
      if (ours === undefined || now !== ours) {
        throw dataDirError(`the lock ${file} is no longer this process's`, file);
      }
      await access(dir, constants.W_OK).catch((error: unknown) => {
        throw dataDirError(`the data dir ${dir} is not writable: ${(error as Error).message}`, dir, error);
      });
    },
  };
}
