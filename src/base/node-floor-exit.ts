/**
 * First import of every bin stub (bin/*.mjs): on a Node.js older than the floor, one line on stderr,
 * `<binary>: ERR_NODE_VERSION: Node.js 20.20.2 (/usr/bin/node) is too old: ...`, and exit 1, before the binary's
 * code is loaded. `#!/usr/bin/env node` runs whichever node is first on PATH; the line names it.
 */
import { NODE_FLOOR_CODE, nodeFloorProblem } from './node-floor.js';

const problem = nodeFloorProblem();
if (problem !== undefined) {
  const binary = (/[^\\/]+$/.exec(process.argv[1] ?? '')?.[0] ?? 'clusterprofile').replace(/\.mjs$/, '');
  process.stderr.write(`${binary}: ${NODE_FLOOR_CODE}: ${problem}\n`);
  process.exit(1);
}
