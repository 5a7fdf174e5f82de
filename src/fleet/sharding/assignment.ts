/**
 * Where a member goes when the fleet is sharded: a member key hashes to one of a fixed number of virtual shards
 * ({@link shardOf}), and each shard goes to one replica of the live set by rendezvous hashing
 * ({@link rendezvousOwner}: highest random weight — every replica scores the shard, the highest score owns it).
 * A replica joining takes about 1/N of the shards from the others and nothing moves between the others; a replica
 * leaving gives its shards out spread over the rest. {@link ringOwner} (consistent hashing with virtual nodes) is
 * kept beside it because the choice between the two is measured (test/unit/fleet-sharding.test.ts,
 * bench/sharding.bench.mjs, docs/explanation/fleet-sharding.md); the fleet uses rendezvous.
 *
 * The hashes are FNV-1a (32-bit) over the UTF-8 bytes, finished with a murmur3 mix: stable across processes, Node
 * versions and machines (every replica must compute the same answer), and cheap enough to run per member.
 */

/** FNV-1a of `text`'s UTF-8 bytes, with murmur3's finalizer so nearby inputs spread over all 32 bits. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The virtual shard of a member: the ONE place a member is hashed. `memberKey` is the fleet's key of the member (the
 * key its members are stored under), so a change of how the fleet keys members moves nothing here.
 */
export function shardOf(memberKey: string, shards: number): number {
  return hash32(memberKey) % shards;
}

/** The replica of `replicas` that owns `shard` by rendezvous hashing; undefined when there is none. */
export function rendezvousOwner(shard: number, replicas: readonly string[]): string | undefined {
  return rendezvousRanked(shard, replicas, undefined);
}

/**
 * The replica that owns `shard` if its owner among `replicas` left: rendezvous's second choice, which is exactly where
 * the shard goes when that owner's Lease expires (every other replica's score is unchanged). Undefined with fewer
 * than two replicas.
 */
export function rendezvousHeir(shard: number, replicas: readonly string[]): string | undefined {
  return rendezvousRanked(shard, replicas, rendezvousOwner(shard, replicas));
}

function rendezvousRanked(shard: number, replicas: readonly string[], skip: string | undefined): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const replica of replicas) {
    if (replica === skip) continue;
    const score = hash32(`${shard}/${replica}`);
    // Ties (rare) go to the smaller identity, so every replica breaks them alike.
    if (score > bestScore || (score === bestScore && best !== undefined && replica < best)) {
      best = replica;
      bestScore = score;
    }
  }
  return best;
}

/** Points of one replica on the ring of {@link ringOwner}. */
export const RING_POINTS_PER_REPLICA = 64;

/** The replica of `replicas` that owns `shard` by consistent hashing on a ring of virtual nodes. */
export function ringOwner(
  shard: number,
  replicas: readonly string[],
  points = RING_POINTS_PER_REPLICA,
): string | undefined {
  const at = hash32(`shard/${shard}`);
  let first: [number, string] | undefined;
  let next: [number, string] | undefined;
  for (const replica of replicas) {
    for (let i = 0; i < points; i++) {
      const point = hash32(`${replica}#${i}`);
      if (first === undefined || point < first[0] || (point === first[0] && replica < first[1]))
        first = [point, replica];
      if (point >= at && (next === undefined || point < next[0] || (point === next[0] && replica < next[1])))
        next = [point, replica];
    }
  }
  return (next ?? first)?.[1];
}

/** Every shard's owner among `replicas` (sorted or not: the answer does not depend on the order). */
export function assignShards(
  shards: number,
  replicas: readonly string[],
  owner: (shard: number, replicas: readonly string[]) => string | undefined = rendezvousOwner,
): (string | undefined)[] {
  return Array.from({ length: shards }, (_, shard) => owner(shard, replicas));
}
