// Cache-hit wall time of a plugin binary against `node -e 0`, side by side (bench/lib/startup.mjs).
//
// The fixture provider (test/fixtures/runtime) is bundled exactly like the real plugins (esbuild, dynamic imports
// split off) with a bin stub that turns on the compile cache. After one warm-up run fills the credential cache,
// the commands run interleaved N times each; medians, p90, CPU time and the ratio are printed. Target: ratio <= 1.3.
//
//   npm exec -- node bench/plugin-runtime.bench.mjs [runs]
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildFixture } from '../test/fixtures/runtime/build.mjs';
import { compareStartup } from './lib/startup.mjs';

const runs = Number(process.argv[2] ?? 40);
const work = mkdtempSync(join(tmpdir(), 'cpc-bench-runtime-'));
const stub = await buildFixture(work);
const execInfo = JSON.stringify({
  kind: 'ExecCredential',
  apiVersion: 'client.authentication.k8s.io/v1',
  spec: {
    interactive: false,
    cluster: { server: 'https://cluster.example:6443', config: { issuerURL: 'https://issuer.example' } },
  },
});
const env = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  KUBERNETES_EXEC_INFO: execInfo,
  NODE_COMPILE_CACHE: join(work, 'compile-cache'),
};
const plugin = [process.execPath, [stub, '--subject', 'alice', '--cache-dir', join(work, 'cache')]];

// The first run issues and fills the cache; every measured run must then be a clean hit.
spawnSync(plugin[0], plugin[1], { env, encoding: 'utf8' });
const hit = spawnSync(plugin[0], plugin[1], { env, encoding: 'utf8' });
if (!hit.stdout.includes('"kind":"ExecCredential"') || hit.stderr !== '')
  throw new Error(`not a clean cache hit: ${hit.stderr}`);

compareStartup({
  title: 'plugin runtime cache hit vs node -e 0',
  commands: {
    'node -e 0': [process.execPath, ['-e', '0']],
    'plugin (cache hit)': plugin,
    'plugin, no compile cache': [...plugin, { NODE_DISABLE_COMPILE_CACHE: '1' }],
  },
  env,
  runs,
  subject: 'plugin (cache hit)',
  target: 1.3,
});
