#!/usr/bin/env node
import '../dist/base/node-floor-exit.js'; // first: on a too old Node.js, one ERR_NODE_VERSION line and exit 1
// Tiny stub: turn on the compile cache before the bundle is parsed, then hand over to the composition root. The
// built-in comes from process.getBuiltinModule: an ESM import of node:module builds its namespace (start-up time).
process.getBuiltinModule('node:module').enableCompileCache?.();
const { run } = await import('../dist/bin/clusterprofile.mjs');
process.exitCode = await run(process.argv.slice(2), process.env, process);
