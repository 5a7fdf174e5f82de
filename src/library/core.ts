// `clusterprofile-credentials/core`: everything that does not need @kubernetes/client-node (providers file,
// resolution, kubeconfig rendering, the exec implementation). Only named exports.
import '../base/node-floor-throw.js'; // first: on a too old Node.js, importing the package throws ERR_NODE_VERSION
export { CredentialsError, isCredentialsError, formatError } from '../base/errors.js';
export type { ErrorCode } from '../base/errors.js';
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
} from '../resolve/types.js';
export { loadAccessConfig, parseAccessConfig } from '../resolve/access-config.js';
export type { AccessConfigErrorCode, AccessConfigFs, LoadAccessConfigOptions } from '../resolve/access-config.js';
export {
  DEFAULT_PROVIDER_FILE,
  PROVIDER_FILE_OPTION,
  withProviderFileOption,
} from '../resolve/provider-file-option.js';
export type { ProviderFileArgs } from '../resolve/provider-file-option.js';
export {
  ADDITIONAL_ARGS_EXTENSION_NAME,
  ADDITIONAL_ENVS_EXTENSION_NAME,
  EXEC_EXTENSION_NAME,
  resolveClusterAccess,
} from '../resolve/cluster-access.js';
export type { ResolveErrorCode, ResolveOptions } from '../resolve/cluster-access.js';
export { kubeconfigFromAccess, renderKubeconfig } from '../resolve/kubeconfig-document.js';
export type { KubeconfigDocument, KubeconfigOptions } from '../resolve/kubeconfig-document.js';
export {
  buildExecRequest,
  DEFAULT_EXEC_TIMEOUT_MS,
  DEFAULT_MAX_EXEC_DEPTH,
  DEFAULT_REFRESH_MARGIN_MS,
  EXEC_DEPTH_ENV,
  ExecAuthenticator,
  ExecCredentialCache,
  execCacheKey,
  validatePluginPolicy,
  parseExecCredential,
  runExecPlugin,
} from '../exec/index.js';
export type {
  CredentialPluginAllowlistEntry,
  CredentialPluginPolicy,
  CredentialPluginPolicyType,
  ExecAuthenticatorOptions,
  ExecCredential,
  ExecErrorCode,
  ExecRequest,
  ExecRequestOptions,
  ExecRun,
  ExecRunOptions,
} from '../exec/index.js';
