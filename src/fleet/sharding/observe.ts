/**
 * A sharded fleet seen from outside (the CLI's `fleet status --lease-namespace`): its Leases read once, without
 * taking part — the shard count the replicas announce, each shard's holder, and the replicas with the shards each
 * holds — and the owner of a member by its key.
 */
import type { SendKubeRequest } from '../../kube/types.js';
import { shardOf } from './assignment.js';
import { LeaseApi } from './leases.js';

/** Who holds what, as the Leases say now. */
export interface ShardOwnership {
  leaseNamespace: string;
  /** The shard count the replica Leases announce (undefined: no replica Lease, or they disagree). */
  shards: number | undefined;
  /** Each shard's holder by index (null: free). */
  holders: (string | null)[];
  /** Every replica with a replica Lease, and the shards it holds. */
  replicas: { identity: string; shards: number }[];
}

/** Reads the Leases of the fleet of inventory `fleet` in `leaseNamespace` (prefix: the fleet's default unless given). */
export async function readShardOwnership(
  send: SendKubeRequest,
  options: { leaseNamespace: string; fleet: string; leaseNamePrefix?: string; timeoutMs?: number },
): Promise<ShardOwnership> {
  const api = new LeaseApi(send, {
    namespace: options.leaseNamespace,
    fleet: options.fleet,
    timeoutMs: options.timeoutMs ?? 30_000,
    now: Date.now,
  });
  const prefix = `${options.leaseNamePrefix ?? `cpfleet-${options.fleet}`}-shard-`;
  const leases = await api.list();
  const counts = new Set(leases.filter((lease) => lease.role === 'replica').map((lease) => lease.shards));
  const shards = counts.size === 1 ? [...counts][0] : undefined;
  const holders: (string | null)[] = Array.from({ length: shards ?? 0 }, () => null);
  for (const lease of leases) {
    if (!lease.name.startsWith(prefix) || lease.problem !== undefined) continue;
    const shard = Number(lease.name.slice(prefix.length));
    if (Number.isInteger(shard) && shard >= 0 && shard < holders.length) holders[shard] = lease.holder ?? null;
  }
  const replicas = leases
    .filter((lease) => lease.role === 'replica' && lease.holder !== undefined)
    .map((lease) => ({ identity: lease.holder!, shards: holders.filter((holder) => holder === lease.holder).length }))
    .sort((a, b) => (a.identity < b.identity ? -1 : a.identity > b.identity ? 1 : 0));
  return { leaseNamespace: options.leaseNamespace, shards, holders, replicas };
}

/** The replica that holds the shard of the member of key `memberKey`; undefined when free or unknown. */
export function ownerOf(ownership: ShardOwnership, memberKey: string): string | undefined {
  if (ownership.shards === undefined) return undefined;
  return ownership.holders[shardOf(memberKey, ownership.shards)] ?? undefined;
}
