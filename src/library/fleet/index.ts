// The fleet manager: ClusterProfileFleet and what its options, events, status and metrics are made of.
export { ClusterProfileFleet, FLEET_CLUSTER_STATES } from './fleet.js';
export type {
  ClusterProfileFleetOptions,
  FleetClusterState,
  FleetClusterStatus,
  FleetEvent,
  FleetEventOf,
  FleetEventType,
  FleetMember,
  FleetStatus,
  HealthCondition,
} from './fleet.js';
export type { AnyCredentialProvider } from './credentials/builtin-plugins.js';
export type { CredentialMode } from './credentials/slots.js';
export type { FleetHubOptions } from './hub-connection.js';
export { FLEET_METRICS } from './metrics.js';
export { systemClock } from './scheduler/clock.js';
export type { FleetClock } from './scheduler/clock.js';
export { DEFAULT_REFRESH_POLICY } from './scheduler/refresh-time.js';
export type { RefreshPolicy } from './scheduler/refresh-time.js';
