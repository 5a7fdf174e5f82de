// Runs every bench/*.bench.mjs in turn (`npm run bench` builds first), each in its own node process with --expose-gc
// so memory figures can settle the heap. Exits non-zero if any benchmark failed to run.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const benches = readdirSync(dir)
  .filter((name) => name.endsWith('.bench.mjs'))
  .sort();
let failed = 0;
for (const name of benches) {
  process.stdout.write(`\n=== ${name} ===\n`);
  const result = spawnSync(process.execPath, ['--expose-gc', `${dir}${name}`], { stdio: 'inherit' });
  if (result.status !== 0) {
    failed += 1;
    process.stdout.write(`${name} exited with ${result.status ?? result.signal}\n`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
