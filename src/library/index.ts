// The package's public surface: the core (./core.js) plus the client-node integration. Only named exports.
export * from './core.js';
export {
  buildConfigFromClusterProfile,
  ClusterProfileKubeConfig,
  DEFAULT_MAX_CONNECTIONS,
  defaultExecCredentialCache,
} from './build-config.js';
export type { BuildConfigOptions } from './build-config.js';
