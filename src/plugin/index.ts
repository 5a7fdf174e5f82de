// The exec-plugin runtime: input, flags, cache, lock, output. Only named exports.
export { runPlugin } from './run.js';
export type { RunPluginOptions } from './run.js';
export type { Env, ProcessIo, Run } from './io.js';
export type {
  CachedCredential,
  CredentialProvider,
  ExecCredentialInput,
  FlagSpec,
  FlagSpecs,
  FlagValues,
  IssueContext,
  IssuedCredential,
  SettingsRequest,
} from './provider.js';
