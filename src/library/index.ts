// The package's public surface: the core (./core.js) plus the client-node integration. Only named exports.
export * from './core.js';
export {
  buildConfigFromClusterProfile,
  ClusterProfileKubeConfig,
  DEFAULT_MAX_CONNECTIONS,
  defaultExecCredentialCache,
} from './build-config.js';
export type { BuildConfigOptions } from './build-config.js';
export { ClusterProfileFleet, DEFAULT_REFRESH_POLICY, FLEET_CLUSTER_STATES, FLEET_METRICS } from './fleet/index.js';
export type {
  AnyCredentialProvider,
  ClusterProfileFleetOptions,
  CredentialMode,
  FleetClock,
  FleetClusterState,
  FleetClusterStatus,
  FleetEvent,
  FleetEventOf,
  FleetEventType,
  FleetHubOptions,
  FleetMember,
  FleetStatus,
  HealthCondition,
  RefreshPolicy,
} from './fleet/index.js';
