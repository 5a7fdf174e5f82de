// The fleet manager: ClusterProfileFleet and what its options, events, status and metrics are made of.
export { ClusterProfileFleet } from './fleet.js';
export { FLEET_CLUSTER_STATES } from './fleet-types.js';
export type {
  AnyCredentialProvider,
  ClusterProfileFleetOptions,
  CredentialMode,
  FleetClusterState,
  FleetClusterStatus,
  FleetEvent,
  FleetEventOf,
  FleetEventType,
  FleetMember,
  FleetShardingStatus,
  FleetStatus,
  HealthCondition,
} from './fleet-types.js';
export type { FleetHubOptions } from './hub-connection.js';
export { INVENTORY_MEMBER_ID_LABEL } from './member-key.js';
export { FLEET_METRICS } from './metrics.js';
export { systemClock } from './scheduler/clock.js';
export type { FleetClock } from './scheduler/clock.js';
export { DEFAULT_REFRESH_POLICY } from './scheduler/refresh-time.js';
export type { RefreshPolicy } from './scheduler/refresh-time.js';
export { DEFAULT_SHARDING } from './sharding/options.js';
export type { FleetShardingOptions } from './sharding/options.js';
