// The exec-plugin runtime: input, flags, cache, lock, output; in-process (obtainCredential) or as a binary (runPlugin).
// Only named exports.
import '../base/node-floor-throw.js'; // first: on a too old Node.js, importing the package throws ERR_NODE_VERSION
export { obtainCredential } from './obtain.js';
export type { ObtainCredentialOptions, ObtainedCredential } from './obtain.js';
export { runPlugin, EXIT } from './run.js';
export type { RunErrorCode, RunPluginOptions } from './run.js';
export { readExecInfo, renderExecCredential, assertUsableStatus } from '../base/exec-credential.js';
export type { ExecCredentialErrorCode, ExecCredentialStatus } from '../base/exec-credential.js';
export { cacheKey, cacheDirectory } from './cache.js';
export type { CacheErrorCode } from './cache.js';
export type { LockErrorCode } from '../base/private-files/pid-lock.js';
export { COMMON_FLAGS } from './flags.js';
export type { PluginUsageErrorCode } from './flags.js';
export type { Env, ProcessIo, Run } from '../base/io.js';
export type {
  CachedCredential,
  CredentialProvider,
  ExecCredentialInput,
  FlagInput,
  FlagSpec,
  FlagSpecs,
  FlagValues,
  IssueContext,
  IssuedCredential,
  RequiredFlagNames,
  SettingsRequest,
} from './provider.js';
