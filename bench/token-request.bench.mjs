// clusterprofile-token-request against the local HTTPS API server of the tests (bundled from test/helpers/kube-api.ts):
//  1. cache hit: wall time against `node -e 0`, side by side, interleaved, after one real TokenRequest (target <= 1.2x);
//  2. cache miss against the warm API server (an empty cache directory every run, so every run is a TokenRequest):
//     wall, CPU and peak RSS beside `node -e 0` and the bare node:https floor, interleaved (bench/lib/miss.mjs; targets
//     <= 1.3x the floor's wall, peak RSS <= the floor's + 3 MiB).
// Targets are reported MET / NOT MET and do not fail the run. CPC_BENCH_BASELINE=<dir> runs that build's plugin beside
// this one (bench/lib/miss.mjs).
//   npm run build && npm exec -- node --expose-gc bench/token-request.bench.mjs [runs]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BASELINE_ROOT, compareMisses, FLOOR_NAME, floorCommand, judgeMiss } from './lib/miss.mjs';
import { PLUGIN_TARGETS } from './lib/report.mjs';
import { compareStartup } from './lib/startup.mjs';
import { importTestHelpers } from './lib/test-helpers.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const runs = Number(process.argv[2] ?? 40);
const work = mkdtempSync(join(tmpdir(), 'cpc-bench-tr-'));

// The test API server and CA (TypeScript), bundled with their external packages resolved from the project.
const { startFakeKubeApi, createTestCa } = await importTestHelpers(
  root,
  'token-request-helpers',
  "export { startFakeKubeApi } from './test/helpers/kube-api.ts'; export { createTestCa } from './test/helpers/tls.ts';",
  ['undici', 'yaml'],
);

const ca = await createTestCa();
const api = await startFakeKubeApi({ ca, minters: { 'fleet/bench': ['bootstrap'] }, serviceAccounts: ['fleet/bench'] });
const kubeconfig = join(work, 'bootstrap.kubeconfig');
writeFileSync(
  kubeconfig,
  JSON.stringify({
    'current-context': 'c',
    clusters: [{ name: 'c', cluster: { server: api.url, 'certificate-authority-data': ca.certBase64 } }],
    users: [{ name: 'u', user: { token: 'bootstrap' } }],
    contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
  }),
);
const execInfo = JSON.stringify({
  kind: 'ExecCredential',
  apiVersion: 'client.authentication.k8s.io/v1',
  spec: {
    interactive: false,
    cluster: {
      server: api.url,
      'certificate-authority-data': ca.certBase64,
      config: { namespace: 'fleet', serviceAccount: 'bench' },
    },
  },
});
const env = {
  PATH: process.env.PATH,
  HOME: work,
  KUBERNETES_EXEC_INFO: execInfo,
  NODE_COMPILE_CACHE: join(work, 'compile-cache'),
};
const pluginArgs = (cacheDir, from = root) => [
  join(from, 'bin/clusterprofile-token-request.mjs'),
  '--bootstrap-kubeconfig',
  kubeconfig,
  '--cache-dir',
  cacheDir,
];
const plugin = [process.execPath, pluginArgs(join(work, 'cache'))];
const baselineCommands = (make) => (BASELINE_ROOT === undefined ? {} : make(BASELINE_ROOT));

// The API server lives in this process's event loop and compareStartup blocks it: mint the one token first, async.
const { spawn } = await import('node:child_process');
await new Promise((resolve, reject) => {
  const child = spawn(plugin[0], plugin[1], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`first run exited with ${code}`))));
});
if (api.minted.length !== 1) throw new Error(`expected one TokenRequest, saw ${api.minted.length}`);

compareStartup({
  title: 'clusterprofile-token-request cache hit vs node -e 0',
  commands: {
    'node -e 0': [process.execPath, ['-e', '0']],
    'token-request (cache hit)': plugin,
    ...baselineCommands((from) => ({
      'token-request (cache hit, baseline)': [process.execPath, pluginArgs(join(work, 'cache'), from)],
    })),
  },
  env,
  runs,
  subject: 'token-request (cache hit)',
  target: PLUGIN_TARGETS.hitRatio,
  what: 'token-request cache hit wall / node -e 0 wall',
});
console.log(`  TokenRequests during the measurement: ${api.minted.length - 1} (every run was a cache hit)`);
if (api.minted.length !== 1) throw new Error('a cache-hit run sent a TokenRequest');

// The floor: the same TokenRequest from a bare node:https script (bench/lib/https-floor.mjs).
const caFile = join(work, 'api-ca.pem');
writeFileSync(caFile, Buffer.from(ca.certBase64, 'base64'));
const floorRequest = {
  url: `${api.url}/api/v1/namespaces/fleet/serviceaccounts/bench/token`,
  method: 'POST',
  headers: { authorization: 'Bearer bootstrap', 'content-type': 'application/json', accept: 'application/json' },
  body: JSON.stringify({
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { audiences: [], expirationSeconds: 3600 },
  }),
};
let floorMinted = 0;

let fresh = 0;
const missRounds = Math.min(runs, 15);
const mintedBefore = api.minted.length;
const misses = await compareMisses({
  title: 'token-request cache miss against the warm API server (a TokenRequest every run) vs node -e 0',
  commands: {
    'node -e 0': () => [process.execPath, ['-e', '0']],
    [FLOOR_NAME]: floorCommand(caFile, [floorRequest]),
    'token-request (cache miss)': () => {
      const dir = join(work, `miss-cache-${fresh++}`);
      mkdirSync(dir, { mode: 0o700 });
      return [process.execPath, pluginArgs(dir)];
    },
    ...baselineCommands((from) => ({
      'token-request (cache miss, baseline)': () => {
        const dir = join(work, `miss-cache-${fresh++}`);
        mkdirSync(dir, { mode: 0o700 });
        return [process.execPath, pluginArgs(dir, from)];
      },
    })),
  },
  env,
  rounds: missRounds,
  work,
  check: (name, stdout) => {
    if (name === FLOOR_NAME) {
      if (stdout.trim() !== '[201]')
        throw new Error(`${name}: the TokenRequest was answered ${stdout.trim()}, not [201]`);
      floorMinted += 1;
    } else if (name !== 'node -e 0' && typeof JSON.parse(stdout).status?.token !== 'string')
      throw new Error(`${name}: no token`);
  },
});
const minted = api.minted.length - mintedBefore - floorMinted;
const expected =
  (BASELINE_ROOT === undefined ? 1 : 2) *
  (2 + missRounds * (misses['token-request (cache miss)'].rss === undefined ? 1 : 2));
console.log(`  TokenRequests seen by the API server: ${minted} (expected ${expected}: every plugin run was a miss)`);
if (minted !== expected) throw new Error('not every cache-miss run sent a TokenRequest');
if (!judgeMiss('token-request cache miss', misses['token-request (cache miss)'], misses[FLOOR_NAME]).measured)
  process.exitCode = 1;
await api.close();
rmSync(work, { recursive: true, force: true });
