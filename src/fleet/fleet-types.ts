/**
 * The fleet's public types: the options of `ClusterProfileFleet` (./fleet.ts), its events, a member as the fleet
 * sees it and the status as plain data. What the package exports of the fleet is declared here or in the module it
 * configures (hub access: ./hub-connection.ts, refresh timing: ./scheduler/refresh-time.ts, the clock:
 * ./scheduler/clock.ts).
 */
import type { Env } from '../base/io.js';
import type { CredentialProvider, FlagSpecs } from '../plugin/provider.js';
import type { ClusterProfileKubeConfig } from '../client-node/build-config.js';
import type { AccessConfig, ResolvedClusterAccess } from '../resolve/types.js';
import type { FleetHubOptions } from './hub-connection.js';
import type { FleetClock } from './scheduler/clock.js';
import type { FleetShardingOptions } from './sharding/options.js';
import type { RefreshPolicy } from './scheduler/refresh-time.js';

/** How a member's credential is obtained: a provider in this process, or the plugin run as a process. */
export type CredentialMode = 'in-process' | 'exec';

/** A credential provider of any flags, settings and state (what the fleet accepts for in-process use). */
export type AnyCredentialProvider = CredentialProvider<FlagSpecs, unknown, unknown>;

/** A member's state: `invalid` (its profile does not resolve), `pending` (first credential on its way), `failing`
 * (no usable credential, the last fetch failed), `unhealthy` (ControlPlaneHealthy is not True), `ready`. */
export type FleetClusterState = 'pending' | 'ready' | 'unhealthy' | 'failing' | 'invalid';
/** Every {@link FleetClusterState}, in the order status and metrics list them. */
export const FLEET_CLUSTER_STATES: readonly FleetClusterState[] = [
  'pending',
  'ready',
  'unhealthy',
  'failing',
  'invalid',
];

/** The ControlPlaneHealthy condition as the profile states it. */
export interface HealthCondition {
  status: string;
  reason?: string;
  message?: string;
}

/** One member cluster of the fleet, as the fleet sees it now (a live view: read it again for the current state). */
export interface FleetMember {
  readonly name: string;
  readonly namespace: string;
  /**
   * The inventory member the profile stands for: its `multicluster.x-k8s.io/inventory-member-id` label when set, else
   * its name. Two profiles with one key are one member, engaged once (the second is `invalid` with
   * `ERR_FLEET_DUPLICATE_MEMBER`).
   */
  readonly memberKey: string;
  readonly state: FleetClusterState;
  /** Between its `added` and `removed` events. */
  readonly engaged: boolean;
  /** The providers-file entry chosen; undefined when the profile does not resolve. */
  readonly providerName: string | undefined;
  readonly mode: CredentialMode | undefined;
  /** What the profile resolved to. */
  readonly access: ResolvedClusterAccess | undefined;
  /** The client (undefined when the profile does not resolve, or the fleet was made with `clients: false`). */
  readonly client: ClusterProfileKubeConfig | undefined;
  /** The resolution error of an invalid profile, else the last credential error (cleared by a success). */
  readonly error: unknown;
  /** ControlPlaneHealthy: true, false, or undefined when the profile has no such condition. */
  readonly healthy: boolean | undefined;
  /** Expiry of the credential held (epoch ms); undefined before the first one or when it never expires. */
  readonly credentialExpiresAt: number | undefined;
  /** Times the client was rebuilt because the resolved access changed. */
  readonly rebuilds: number;
  /** Credential fetches of its plugin input (successful or not; shared by members with the same input). */
  readonly fetches: number;
}

/**
 * What the fleet reports, by `type`: a member engaged (`added`), its client rebuilt (`updated`), disengaged
 * (`removed`), its control plane unhealthy, a credential fetch failed, its profile invalid, or the hub failing.
 */
export type FleetEvent =
  | { type: 'added'; name: string; member: FleetMember }
  /** The resolved access changed: `member.client` is a new client; the previous one is closed. */
  | { type: 'updated'; name: string; member: FleetMember; previousClient: ClusterProfileKubeConfig | undefined }
  /**
   * Disengaged: the profile was deleted, became invalid or unhealthy, the fleet closed, or (sharded) the member's
   * shard was handed over to another replica (`handedOver`) or its lease could not be renewed in time (`fenced`).
   */
  | {
      type: 'removed';
      name: string;
      reason: 'deleted' | 'invalid' | 'unhealthy' | 'closed' | 'handedOver' | 'fenced';
    }
  | { type: 'unhealthy'; name: string; member: FleetMember; condition: HealthCondition | undefined }
  | {
      type: 'credentialError';
      name: string;
      member: FleetMember;
      error: unknown;
      failures: number;
      retryAt: number | undefined;
    }
  /** The profile does not resolve (bad profile, no matching provider, bad exec args): the member has no client. */
  | { type: 'invalid'; name: string; member: FleetMember; error: unknown }
  /** Listing or watching the hub failed; retried with backoff. */
  | { type: 'hubError'; error: unknown; failures: number }
  /**
   * Sharded: this replica acquired a shard (its `members` engaged next; `from` the replica that held it), released it
   * to another replica (`released`: its members got `removed`, reason `handedOver`) or lost it to its fencing
   * deadline (`lost`: `removed`, reason `fenced`).
   */
  | {
      type: 'handOver';
      shard: number;
      action: 'acquired' | 'released' | 'lost';
      members: number;
      from?: string | undefined;
    }
  /** Sharded: a Lease request failed or a Lease is bad (a coded error: `ERR_FLEET_LEASE_*`, `ERR_FLEET_REPLICA_IDENTITY`, `ERR_FLEET_SHARD_CONFIG`). */
  | { type: 'leaseError'; error: unknown; failures: number };

/** The `type` of a {@link FleetEvent}. */
export type FleetEventType = FleetEvent['type'];
/** The {@link FleetEvent} of type `T` (what a listener of `ClusterProfileFleet.on` gets). */
export type FleetEventOf<T extends FleetEventType> = Extract<FleetEvent, { type: T }>;

/** One member's row of `ClusterProfileFleet.status()`: plain data (JSON-ready). */
export interface FleetClusterStatus {
  name: string;
  /** The inventory-member-id label's value, when the profile has one that differs from its name. */
  memberKey?: string;
  state: FleetClusterState;
  engaged: boolean;
  provider?: string;
  mode?: CredentialMode;
  healthy?: boolean;
  /** RFC 3339. */
  credentialExpiresAt?: string;
  /** When the scheduler fetches its credential next (RFC 3339). */
  nextFetchAt?: string;
  lastError?: { code: string; message: string };
  fetches: number;
  rebuilds: number;
  /** Sharded: the member's virtual shard and the replica that owns it (this one: only owned members are listed). */
  shard?: number;
  owner?: string;
}

/** Sharded: the replica set and the shards as this replica sees them. */
export interface FleetShardingStatus {
  identity: string;
  leaseNamespace: string;
  shards: number;
  /** The shards this replica owns. */
  ownedShards: number[];
  /** Every replica seen in the Leases: live (renewing within its lease duration) or not, and its shard count. */
  replicas: { identity: string; live: boolean; shards: number }[];
  /** Each shard's holder by index (null: free). */
  holders: (string | null)[];
  /**
   * With `sharding.standby`: the shards this replica would inherit, the members whose credentials it holds for them
   * and how many of those hold a credential now (`ready`: a fail-over engages them without a fetch).
   */
  standby?: { shards: number[]; members: number; ready: number };
}

/** The fleet as plain data (JSON-ready), from `ClusterProfileFleet.status()`. */
export interface FleetStatus {
  namespace: string;
  hub: {
    server: string | undefined;
    /** The ClusterProfile version served (v1alpha1, else v1alpha2). */
    version: string | undefined;
    resourceVersion: string | undefined;
    synced: boolean;
    relists: number;
    lastError?: { code: string; message: string };
  };
  counts: Record<FleetClusterState, number>;
  /** Credential fetches under way, waiting, plugin processes running, refreshes scheduled. */
  credentials: { slots: number; fetching: number; waiting: number; processes: number; scheduled: number };
  clusters: FleetClusterStatus[];
  /** Present when the fleet is sharded. */
  sharding?: FleetShardingStatus;
}

/** What `ClusterProfileFleet` is made with: the inventory and the providers file, the rest optional. */
export interface ClusterProfileFleetOptions {
  /** The inventory: the namespace of ClusterProfiles on the hub. */
  namespace: string;
  /** The providers file (`loadAccessConfig`). */
  accessConfig: AccessConfig;
  /** Hub access: a kubeconfig and context, or access already loaded; default: KUBECONFIG, ~/.kube/config, in-cluster. */
  hub?: FleetHubOptions;
  /** Credential providers by provider name, used in-process whatever the providers file's command says. */
  providers?: Readonly<Record<string, AnyCredentialProvider>>;
  /** Obtain the credentials of this package's plugins in-process (default true); false runs them as processes. */
  inProcess?: boolean;
  /** Build a client-node client per member (default true; needs @kubernetes/client-node). */
  clients?: boolean;
  /** Engage a member only while its ControlPlaneHealthy condition is True (default false). */
  requireHealthy?: boolean;
  /** Disengage (`removed`) an engaged member whose ControlPlaneHealthy turns False (default false: report only). */
  disengageUnhealthy?: boolean;
  /** Credential fetches at once (default 16). */
  maxConcurrentFetches?: number;
  /** Plugin processes at once (default 4). */
  maxConcurrentProcesses?: number;
  /** Deadline of one credential fetch (default 30 s): a plugin process is killed, an in-process provider aborted. */
  fetchTimeoutMs?: number;
  /** Refresh and backoff timing (see {@link RefreshPolicy}). */
  refresh?: Partial<RefreshPolicy>;
  /** Most connections per member client (default: ClusterProfileKubeConfig's). */
  maxConnections?: number;
  /** The environment plugins and in-process providers see (default `process.env`); also the hub's kubeconfig order. */
  env?: Env;
  /** Relative paths of the hub kubeconfig resolve against this (default `process.cwd()`). */
  cwd?: string;
  /** Deprecation warnings of profiles and listener failures (default: none). */
  warn?: (message: string) => void;
  /** A plugin process's stderr (default: kept for its error message only). */
  onPluginStderr?: (text: string) => void;
  /** Clock and timers (tests freeze them). */
  clock?: FleetClock;
  /** Random source in [0, 1) for jitter. */
  random?: () => number;
  /**
   * Share the members among the replicas of a controller through Leases on the hub (see {@link FleetShardingOptions}):
   * each replica engages only the members of the virtual shards it holds. Without it the fleet engages every member.
   */
  sharding?: FleetShardingOptions;
  /** Monotonic milliseconds for the sharding deadlines (default the process's; tests freeze it with `clock`). */
  monotonic?: () => number;
}
