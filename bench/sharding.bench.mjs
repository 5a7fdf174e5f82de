// How a sharded fleet's members are placed (src/fleet/sharding/assignment.ts): rendezvous hashing (what the fleet
// uses) against consistent hashing on a ring (64 points per replica), for 64 and 1024 virtual shards, over 200 sets
// of replica names (pod names differ per Deployment: each set is one draw). For each: the share of shards that move
// when a fourth replica joins three and when one of three leaves (the ideal: 1/4 and 1/3), and the largest replica's
// shard count over a fair share with three replicas (the ideal: 1). The figures are a function of the hash, not of
// the machine: every run prints the same. Ends with one JSON object of the figures.
//   npm run build && node bench/sharding.bench.mjs
import { assignShards, rendezvousOwner, ringOwner } from '../dist/fleet/sharding/assignment.js';
import { formatSummary, summary } from './lib/report.mjs';

const SETS = 200;
const figures = {};
console.log(`placement of virtual shards over replicas, ${SETS} replica name sets each (median (min–max))`);
for (const [strategy, owner] of [
  ['rendezvous', rendezvousOwner],
  ['consistent-hashing', ringOwner],
]) {
  for (const shards of [64, 1024]) {
    const joined = [];
    const left = [];
    const largest = [];
    for (let set = 0; set < SETS; set += 1) {
      const names = Array.from({ length: 4 }, (_, i) => `hub-controller-${set}-${i}`);
      const three = assignShards(shards, names.slice(0, 3), owner);
      const four = assignShards(shards, names, owner);
      const two = assignShards(shards, names.slice(1, 3), owner);
      joined.push(three.filter((holder, i) => holder !== four[i]).length / shards);
      left.push(three.filter((holder, i) => holder !== two[i]).length / shards);
      const counts = new Map();
      for (const holder of three) counts.set(holder, (counts.get(holder) ?? 0) + 1);
      largest.push(Math.max(...counts.values()) / (shards / 3));
    }
    const row = { joinMoved: summary(joined), leaveMoved: summary(left), largestOverFair: summary(largest) };
    figures[`${strategy}/${shards}`] = row;
    console.log(
      `  ${strategy.padEnd(18)} ${String(shards).padStart(4)} shards: a 4th joins → ${formatSummary(row.joinMoved, 3)} moved (ideal 0.250); one of 3 leaves → ${formatSummary(row.leaveMoved, 3)} (ideal 0.333); largest of 3 / fair share ${formatSummary(row.largestOverFair, 2)}`,
    );
  }
}
console.log(JSON.stringify({ bench: 'sharding-assignment', sets: SETS, figures }));
