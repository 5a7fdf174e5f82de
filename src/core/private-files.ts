/**
 * Files that hold secrets or state, and the directories they live in: the door of `private-files/`, re-exporting its
 * three rooms for importers that name this module — `privacy.ts` (private files and directories: the checks, and a
 * checked, bounded read), `atomic-write.ts` (a file replaced atomically) and `pid-lock.ts` (one writer at a time).
 *
 * Modules outside src/providers/tenant-cert/ import the room they use; the three in there (being moved on another
 * branch) still import this door, which can go once they import the rooms too.
 */
export {
  isTemporaryOf,
  removeTemporaryFiles,
  temporaryPath,
  writeFileAtomic,
  writeFileAtomicSync,
} from './private-files/atomic-write.js';
export {
  acquireLock,
  type HeldLock,
  isLockHeld,
  type LockErrorCode,
  type LockOptions,
  type LockOwner,
} from './private-files/pid-lock.js';
export {
  checkPrivateDirectory,
  PRIVATE_MODE_MASK,
  type PrivacyProblem,
  privacyProblem,
  type ReadPrivateFileOptions,
  readPrivateFile,
} from './private-files/privacy.js';
