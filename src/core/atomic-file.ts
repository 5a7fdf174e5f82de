/** Moved to private-files.ts; this re-export keeps older import paths working. */
export { writeFileAtomic } from './private-files.js';
