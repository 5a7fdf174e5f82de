/**
 * The `sharding` option of ClusterProfileFleet: what a controller author sets to run the fleet on several replicas
 * (./coordinator.ts), its defaults and their checks (`ERR_FLEET_OPTIONS`, path `sharding.<option>`).
 */
import { CredentialsError } from '../../base/errors.js';

/** How the replicas of one fleet share its members (see docs/explanation/fleet-sharding.md). */
export interface FleetShardingOptions {
  /** This replica's name among the replicas, unique: the pod name (metadata.name through the downward API). */
  identity: string;
  /** The namespace of the Leases the replicas coordinate through (the controller's own). */
  leaseNamespace: string;
  /** Virtual shards the members are hashed into; every replica must agree (default {@link DEFAULT_SHARDING}). */
  shards?: number;
  /** `leaseDurationSeconds` of every Lease: how long a silent replica keeps its shards. */
  leaseDurationSeconds?: number;
  /** How often a replica renews its Leases and reads the replica set. */
  renewIntervalMs?: number;
  /** How long before its lease could end (measured from the renewal's start) a replica stops acting on a shard. */
  safetyMarginMs?: number;
  /** Prefix of the Lease names (default `cpfleet-<inventory namespace>`). */
  leaseNamePrefix?: string;
  /**
   * Warm standby (default false): this replica also holds credentials, refreshed, for the members of the shards it
   * would inherit if their owner stopped (no client, never handed out), so a fail-over engages them without a fetch.
   * It doubles the credentials issued for the fleet (see docs/guides/fleet-sharding.md).
   */
  standby?: boolean;
}

/** The defaults: 64 shards, a 15 s lease renewed every 5 s, fenced 2 s early. */
export const DEFAULT_SHARDING = {
  shards: 64,
  leaseDurationSeconds: 15,
  renewIntervalMs: 5_000,
  safetyMarginMs: 2_000,
  standby: false,
} as const;

export type ResolvedShardingOptions = Required<FleetShardingOptions>;

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

function bad(option: string, message: string): CredentialsError {
  return new CredentialsError('ERR_FLEET_OPTIONS', `sharding.${option} ${message}`, { path: `sharding.${option}` });
}

function whole(option: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw bad(option, `must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return value;
}

/** The options with defaults applied, checked; `inventory` is the fleet's namespace. */
export function resolveShardingOptions(given: unknown, inventory: string): ResolvedShardingOptions {
  if (typeof given !== 'object' || given === null)
    throw new CredentialsError('ERR_FLEET_OPTIONS', 'sharding must be an object: { identity, leaseNamespace }', {
      path: 'sharding',
    });
  const options = given as FleetShardingOptions;
  if (typeof options.identity !== 'string' || !SUBDOMAIN.test(options.identity) || options.identity.length > 128)
    throw bad(
      'identity',
      `must be a DNS-1123 name of at most 128 characters (the pod name), got ${JSON.stringify(options.identity)}`,
    );
  if (
    typeof options.leaseNamespace !== 'string' ||
    !LABEL.test(options.leaseNamespace) ||
    options.leaseNamespace.length > 63
  )
    throw bad(
      'leaseNamespace',
      `must be a namespace name (a DNS-1123 label), got ${JSON.stringify(options.leaseNamespace)}`,
    );
  const prefix = options.leaseNamePrefix ?? `cpfleet-${inventory}`;
  if (typeof prefix !== 'string' || !SUBDOMAIN.test(prefix) || prefix.length > 100)
    throw bad('leaseNamePrefix', `must be a DNS-1123 name of at most 100 characters, got ${JSON.stringify(prefix)}`);
  const resolved: ResolvedShardingOptions = {
    identity: options.identity,
    leaseNamespace: options.leaseNamespace,
    leaseNamePrefix: prefix,
    shards: whole('shards', options.shards ?? DEFAULT_SHARDING.shards, 1, 4096),
    leaseDurationSeconds: whole(
      'leaseDurationSeconds',
      options.leaseDurationSeconds ?? DEFAULT_SHARDING.leaseDurationSeconds,
      1,
      3600,
    ),
    renewIntervalMs: whole(
      'renewIntervalMs',
      options.renewIntervalMs ?? DEFAULT_SHARDING.renewIntervalMs,
      100,
      3_600_000,
    ),
    safetyMarginMs: whole('safetyMarginMs', options.safetyMarginMs ?? DEFAULT_SHARDING.safetyMarginMs, 0, 3_600_000),
    standby: options.standby ?? DEFAULT_SHARDING.standby,
  };
  if (typeof resolved.standby !== 'boolean')
    throw bad('standby', `must be true or false, got ${JSON.stringify(options.standby)}`);
  // Two renewals must fit before the fence, or one slow renewal costs a replica its shards.
  if (2 * resolved.renewIntervalMs + resolved.safetyMarginMs > resolved.leaseDurationSeconds * 1000)
    throw bad(
      'renewIntervalMs',
      `(${resolved.renewIntervalMs} ms) twice, plus safetyMarginMs (${resolved.safetyMarginMs} ms), must fit in leaseDurationSeconds (${resolved.leaseDurationSeconds} s)`,
    );
  return resolved;
}
