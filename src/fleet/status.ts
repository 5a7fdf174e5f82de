/**
 * The fleet as plain data (JSON-ready), for `ClusterProfileFleet.status()`, the metrics' gauges and the CLI: a
 * member's row, members counted by state, the nearest credential expiry, `{ code, message }` of an error, and the
 * replica set and shard holders of a sharded fleet.
 */
import { isCredentialsError } from '../base/errors.js';
import type { CredentialSlot } from './credentials/slots.js';
import type { ShardCoordinator } from './sharding/coordinator.js';
import type { ResolvedShardingOptions } from './sharding/options.js';
import {
  FLEET_CLUSTER_STATES,
  type FleetClusterState,
  type FleetClusterStatus,
  type FleetMember,
  type FleetShardingStatus,
} from './fleet-types.js';

/** `{ code, message }` of any error (code `uncoded` for an uncoded one). */
export function errorSummary(error: unknown): { code: string; message: string } {
  if (isCredentialsError(error)) return { code: error.code, message: error.message };
  return { code: 'uncoded', message: error instanceof Error ? error.message : String(error) };
}

/** One member's row; `nextFetchAt` is when the scheduler fetches its credential next (epoch ms). */
export function memberStatus(member: FleetMember, nextFetchAt: number | undefined): FleetClusterStatus {
  const row: FleetClusterStatus = {
    name: member.name,
    state: member.state,
    engaged: member.engaged,
    fetches: member.fetches,
    rebuilds: member.rebuilds,
  };
  if (member.memberKey !== member.name) row.memberKey = member.memberKey;
  if (member.providerName !== undefined) row.provider = member.providerName;
  if (member.mode !== undefined) row.mode = member.mode;
  if (member.healthy !== undefined) row.healthy = member.healthy;
  const expires = member.credentialExpiresAt;
  if (expires !== undefined) row.credentialExpiresAt = new Date(expires).toISOString();
  if (nextFetchAt !== undefined) row.nextFetchAt = new Date(nextFetchAt).toISOString();
  const error = member.error;
  if (error !== undefined) row.lastError = errorSummary(error);
  return row;
}

/** Members by state, every state present (zero included). */
export function countByState(members: Iterable<FleetMember>): Record<FleetClusterState, number> {
  const counts = Object.fromEntries(FLEET_CLUSTER_STATES.map((state) => [state, 0])) as Record<
    FleetClusterState,
    number
  >;
  for (const member of members) counts[member.state] += 1;
  return counts;
}

/** Seconds from now to the earliest expiry among `slots`' credentials; undefined when none expires. */
export function secondsToNearestExpiry(slots: Iterable<CredentialSlot>, now: () => number): number | undefined {
  let nearest: number | undefined;
  for (const slot of slots) {
    const at = slot.credential?.expiresAt;
    if (at !== undefined && (nearest === undefined || at < nearest)) nearest = at;
  }
  return nearest === undefined ? undefined : (nearest - now()) / 1000;
}

/** A sharded fleet's replica set and shard holders, as this replica last read them. */
export function shardingStatus(
  coordinator: ShardCoordinator,
  sharding: ResolvedShardingOptions,
  standby: { shards: readonly number[]; members: number; ready: number },
): FleetShardingStatus {
  return {
    identity: sharding.identity,
    leaseNamespace: sharding.leaseNamespace,
    shards: sharding.shards,
    ownedShards: coordinator.ownedShards(),
    replicas: coordinator.replicas().map((replica) => ({ ...replica })),
    holders: coordinator.holders().map((holder) => holder ?? null),
    ...(sharding.standby ? { standby: { ...standby, shards: [...standby.shards].sort((a, b) => a - b) } } : {}),
  };
}
