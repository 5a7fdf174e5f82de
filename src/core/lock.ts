/** Moved to private-files.ts; this re-export keeps older import paths working. */
export { acquireLock, isLockHeld, type HeldLock, type LockErrorCode, type LockOptions, type LockOwner } from './private-files.js';
