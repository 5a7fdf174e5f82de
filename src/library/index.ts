// The package's public surface: only named exports.
export { CredentialsError, isCredentialsError, formatError } from './errors.js';
export type {
  AccessConfig,
  AccessProvider,
  Cluster,
  ClusterProfile,
  ExecApiVersion,
  ExecConfig,
  InteractiveMode,
  NamedExtension,
  ProviderConfig,
  CLIArgsPolicy,
  EnvVarsPolicy,
  ExecCluster,
  ExecCredentialStatus,
  ResolvedClusterAccess,
} from './types.js';
