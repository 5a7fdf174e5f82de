// The package's public surface: the core (./core.js) plus the client-node integration. Only named exports.
import '../base/node-floor-throw.js'; // first: on a too old Node.js, importing the package throws ERR_NODE_VERSION
export * from './core.js';
export {
  buildConfigFromClusterProfile,
  ClusterProfileKubeConfig,
  DEFAULT_MAX_CONNECTIONS,
  defaultExecCredentialCache,
} from '../client-node/build-config.js';
export type { BuildConfigOptions } from '../client-node/build-config.js';
export {
  ClusterProfileFleet,
  DEFAULT_REFRESH_POLICY,
  DEFAULT_SHARDING,
  FLEET_CLUSTER_STATES,
  FLEET_METRICS,
  INVENTORY_MEMBER_ID_LABEL,
} from '../fleet/index.js';
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
  FleetShardingOptions,
  FleetShardingStatus,
  FleetStatus,
  HealthCondition,
  RefreshPolicy,
} from '../fleet/index.js';
