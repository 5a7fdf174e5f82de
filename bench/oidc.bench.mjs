// Benchmarks of clusterprofile-oidc against the real test OpenID Provider (test/helpers/oidc-op.ts), side by side
// with a peer, int128/kubelogin (bench/lib/kubelogin.mjs builds it from the Go module proxy into the shared cache):
//  1. cache hit: wall and CPU time of our plugin, `kubelogin get-token` with a warm token cache and `node -e 0`,
//     interleaved (bench/lib/startup.mjs); target: ours <= 1.2x node -e 0;
//  2. token acquisition in process (discovery + JWKS + grant + validation, as issue() does on a miss): informational;
//  3. cache miss against the warm OP (client_credentials, client_secret_basic, resource = the audience; an empty
//     cache directory every run): wall, CPU and peak RSS of our plugin, kubelogin and `node -e 0`, interleaved
//     (bench/lib/miss.mjs); targets: ours <= 1.3x the bare node:https floor's wall, peak RSS <= the floor's + 3 MiB
//     (bench/lib/report.mjs PLUGIN_TARGETS). kubelogin runs with
//     --grant-type client-credentials --oidc-use-access-token: discovery + grant, and it does not validate the
//     access token (no JWKS fetch); ours validates it.
// Targets are reported MET / NOT MET and do not fail the run; a benchmark that cannot run does (exit code 1). Without
// Go (and no kubelogin built before) the peer is skipped with one line saying why.
// Run after `npm run build`, with Node 24: `npm exec -- node bench/oidc.bench.mjs [runs]` (default 30; or env RUNS).
// OIDC_PLUGIN_BIN measures another build of the plugin; CPC_BENCH_BASELINE=<dir> runs that build's plugin beside this
// one (bench/lib/miss.mjs).
import { spawn } from 'node:child_process';
import { get } from 'node:https';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureKubelogin } from './lib/kubelogin.mjs';
import { BASELINE_ROOT, compareMisses, FLOOR_NAME, floorCommand, judgeMiss } from './lib/miss.mjs';
import { formatSummary, loadText, PLUGIN_TARGETS, summary } from './lib/report.mjs';
import { compareStartup } from './lib/startup.mjs';
import { importTestHelpers } from './lib/test-helpers.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = process.env.OIDC_PLUGIN_BIN ?? join(root, 'bin/clusterprofile-oidc.mjs');
const runs = Number(process.argv[2] ?? process.env.RUNS ?? 30);
const missRounds = Math.min(runs, 15);
const work = mkdtempSync(join(tmpdir(), 'cpc-oidc-bench-'));

// The peer first: a cold build takes a while, and it must not run while the measurements do.
let kubelogin;
try {
  kubelogin = await ensureKubelogin();
  if ('skipped' in kubelogin) console.log(`kubelogin peer skipped: ${kubelogin.skipped}`);
  else
    console.log(
      `peer: kubelogin ${kubelogin.version} (built with ${kubelogin.goVersion}${kubelogin.built ? `, just now in ${kubelogin.seconds}s` : ', cached'}) ${kubelogin.bin}`,
    );
} catch (error) {
  // Go is there but the build failed: measure our side, then exit non-zero.
  console.log(`kubelogin peer could not be built: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
const peer = kubelogin !== undefined && !('skipped' in kubelogin) ? kubelogin.bin : undefined;

// The test OP (TypeScript), bundled with its external packages resolved from the project.
const { startTestOpenIdProvider } = await importTestHelpers(
  root,
  'oidc-op',
  "export { startTestOpenIdProvider } from './test/helpers/oidc-op.ts';",
  ['oidc-provider', 'jose', 'undici'],
);

const op = await startTestOpenIdProvider();
const secretFile = join(work, 'secret');
writeFileSync(secretFile, op.clients.basic.clientSecret, { mode: 0o600 });
const caFile = join(work, 'op-ca.pem');
writeFileSync(caFile, op.caPem);
const cacheDir = join(work, 'cache');
const config = {
  issuerURL: op.issuer,
  issuerCA: op.caBase64,
  clientID: op.clients.basic.clientId,
  audience: op.audience,
};
const execInfo = JSON.stringify({
  kind: 'ExecCredential',
  apiVersion: 'client.authentication.k8s.io/v1',
  spec: { interactive: false, cluster: { server: 'https://k8s.test', config } },
});
const env = {
  PATH: process.env.PATH,
  HOME: work,
  KUBERNETES_EXEC_INFO: execInfo,
  NODE_COMPILE_CACHE: join(work, 'compile-cache'),
};
const pluginArgs = (dir, plugin = bin) => [plugin, '--client-secret-file', secretFile, '--cache-dir', dir];
const baselineBin = BASELINE_ROOT === undefined ? undefined : join(BASELINE_ROOT, 'bin/clusterprofile-oidc.mjs');
// The same client, grant, client authentication (client_secret_basic) and resource as ours; kubelogin has no
// secret-file flag. Its cache key is issuer + client + TLS settings, so the hit runs use exactly the fill's flags.
const kubeloginArgs = (dir) => [
  'get-token',
  '--oidc-issuer-url',
  op.issuer,
  '--oidc-client-id',
  op.clients.basic.clientId,
  '--oidc-client-secret',
  op.clients.basic.clientSecret,
  '--grant-type',
  'client-credentials',
  '--oidc-use-access-token',
  '--oidc-auth-request-extra-params',
  `resource=${op.audience}`,
  '--certificate-authority',
  caFile,
  '--token-cache-dir',
  dir,
];
const kubeloginCache = join(work, 'kubelogin-cache');
// kubelogin cannot read spec.cluster (client-go's ExecCredential wants a runtime.Object in cluster.config), so it
// gets what kubectl sends without provideClusterInfo; it needs nothing from there anyway.
const kubeloginEnv = {
  KUBERNETES_EXEC_INFO: JSON.stringify({
    kind: 'ExecCredential',
    apiVersion: 'client.authentication.k8s.io/v1',
    spec: { interactive: false },
  }),
};

// Every measured run of a plugin must print a credential with a token.
const checkCredential = (name, stdout) => {
  if (name.startsWith('node')) return;
  const credential = JSON.parse(stdout);
  if (credential.kind !== 'ExecCredential' || typeof credential.status?.token !== 'string')
    throw new Error(`${name}: no token in ${stdout.slice(0, 200)}`);
};

// The OP lives in this event loop: runs that talk to it are spawned asynchronously.
function runAsync(command, args, extraEnv = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`${command} ${args[0]} failed (${code}): ${stderr}`)),
    );
  });
}

try {
  // 1. Cache hits. Fill both caches (one grant each, asynchronously), then the shared side-by-side harness, which
  // blocks the event loop: a run that missed would hang on the OP, so a hit is also proven by the grant count.
  checkCredential('oidc', await runAsync(process.execPath, pluginArgs(cacheDir)));
  if (peer) checkCredential('kubelogin', await runAsync(peer, kubeloginArgs(kubeloginCache), kubeloginEnv));
  const grantsBefore = op.grants.length;
  const hitCommands = {
    'node -e 0': [process.execPath, ['-e', '0']],
    'oidc (cache hit)': [process.execPath, pluginArgs(cacheDir)],
  };
  if (peer) hitCommands['kubelogin (cache hit)'] = [peer, kubeloginArgs(kubeloginCache), kubeloginEnv];
  if (baselineBin) hitCommands['oidc (cache hit, baseline)'] = [process.execPath, pluginArgs(cacheDir, baselineBin)];
  compareStartup({
    title: `clusterprofile-oidc cache hit vs ${peer ? 'kubelogin cache hit vs ' : ''}node -e 0`,
    commands: hitCommands,
    env,
    runs,
    subject: 'oidc (cache hit)',
    target: PLUGIN_TARGETS.hitRatio,
    what: 'oidc cache hit wall / node -e 0 wall',
    check: (name, result) => checkCredential(name, result.stdout),
  });
  console.log(
    `  token requests during the measurement: ${op.grants.length - grantsBefore} (every run was a cache hit)`,
  );
  if (op.grants.length !== grantsBefore) throw new Error('a cache-hit run asked the OP for a token');

  // 2. Token acquisition, in process, from the compiled library (dist/): discovery + JWKS + grant + validation.
  const { issueOidcToken } = await import(pathToFileURL(join(root, 'dist/providers/oidc/issue.js')).href);
  const { parseOidcSettings } = await import(pathToFileURL(join(root, 'dist/providers/oidc/settings.js')).href);
  const flags = { 'client-secret-file': secretFile, 'open-browser': false, 'token-param': [] };
  const settings = parseOidcSettings(JSON.parse(execInfo), flags);
  const context = () => ({
    now: () => new Date(),
    interactive: false,
    stdin: Readable.from([]),
    stderr: new PassThrough(),
    signal: new AbortController().signal,
    env: {},
    previous: undefined,
  });
  const before = op.grants.length;
  for (let i = 0; i < 5; i += 1) await issueOidcToken(settings, context());
  const grantMs = [];
  for (let i = 0; i < runs; i += 1) {
    const start = process.hrtime.bigint();
    await issueOidcToken(settings, context());
    grantMs.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  console.log(
    `oidc token acquisition in process from a warm OP (discovery + JWKS + grant + validation, new TLS connection each), ${runs} runs`,
  );
  console.log(
    `  ${formatSummary(summary(grantMs), 1, ' ms')} median (min–max); grants seen by the OP: ${op.grants.length - before} (expected ${runs + 5}); load ${loadText()}`,
  );

  // 3. Cache misses: an empty cache directory for every run, so each one does the whole acquisition and writes it.
  let fresh = 0;
  const freshDir = (prefix) => {
    const dir = join(work, `${prefix}-${fresh++}`);
    mkdirSync(dir, { mode: 0o700 });
    return dir;
  };
  // The floor: what a miss sends (discovery, JWKS, the client_credentials grant with client_secret_basic and the
  // resource), from a bare node:https script over one connection; it validates nothing.
  const discoveryURL = `${op.issuer}/.well-known/openid-configuration`;
  const metadata = await new Promise((resolve, reject) => {
    get(discoveryURL, { ca: op.caPem }, (response) => {
      let text = '';
      response
        .setEncoding('utf8')
        .on('data', (chunk) => (text += chunk))
        .on('end', () => resolve(JSON.parse(text)));
    }).on('error', reject);
  });
  const form = (value) => encodeURIComponent(value).replace(/%20/g, '+');
  const floorRequests = [
    { url: discoveryURL, headers: { accept: 'application/json' } },
    { url: metadata.jwks_uri, headers: { accept: 'application/jwk-set+json, application/json' } },
    {
      url: metadata.token_endpoint,
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        authorization: `Basic ${Buffer.from(`${form(op.clients.basic.clientId)}:${form(op.clients.basic.clientSecret)}`).toString('base64')}`,
      },
      body: `grant_type=client_credentials&resource=${encodeURIComponent(op.audience)}`,
    },
  ];
  let floorGrants = 0;
  const missCommands = {
    'node -e 0': () => [process.execPath, ['-e', '0']],
    [FLOOR_NAME]: floorCommand(caFile, floorRequests),
    'oidc (cache miss)': () => [process.execPath, pluginArgs(freshDir('miss-cache'))],
  };
  if (peer)
    missCommands['kubelogin (cache miss)'] = () => [peer, kubeloginArgs(freshDir('miss-kubelogin')), kubeloginEnv];
  if (baselineBin)
    missCommands['oidc (cache miss, baseline)'] = () => [
      process.execPath,
      pluginArgs(freshDir('miss-cache'), baselineBin),
    ];
  const grantsBeforeMiss = op.grants.length;
  const misses = await compareMisses({
    title: `cache miss against the warm OP (client_credentials, a new token every run): clusterprofile-oidc${peer ? ' vs kubelogin' : ''} vs node -e 0`,
    commands: missCommands,
    env,
    rounds: missRounds,
    work,
    check: (name, stdout) => {
      if (name !== FLOOR_NAME) return checkCredential(name, stdout);
      if (stdout.trim() !== '[200,200,200]')
        throw new Error(`${name}: the OP answered ${stdout.trim()}, not [200,200,200]`);
      floorGrants += 1;
    },
  });
  const plugins = (peer ? 2 : 1) + (baselineBin ? 1 : 0);
  const timedRuns = (misses['oidc (cache miss)'].rss === undefined ? 1 : 2) * missRounds;
  const expectedGrants = plugins * (2 + timedRuns);
  console.log(
    `  grants seen by the OP for the plugins: ${op.grants.length - grantsBeforeMiss - floorGrants} (expected ${expectedGrants}: every plugin run was a miss)`,
  );
  if (op.grants.length - grantsBeforeMiss - floorGrants !== expectedGrants)
    throw new Error('not every cache-miss run obtained a new token');
  const ours = judgeMiss('oidc cache miss', misses['oidc (cache miss)'], misses[FLOOR_NAME]);
  if (!ours.measured) process.exitCode = 1;
  if (peer) {
    const theirs = misses['kubelogin (cache miss)'];
    const o = misses['oidc (cache miss)'];
    const cpuText = (r) => (r.cpu === undefined ? 'n/a' : `${r.cpu.median.toFixed(0)} ms`);
    const rssText = (r) => (r.rss === undefined ? 'n/a' : `${r.rss.median.toFixed(1)} MiB`);
    console.log(
      `  beside kubelogin ${kubelogin.version} (medians; kubelogin does not validate the token): wall ${o.wall.median.toFixed(1)} vs ${theirs.wall.median.toFixed(1)} ms (${(o.wall.median / theirs.wall.median).toFixed(2)}x), cpu ${cpuText(o)} vs ${cpuText(theirs)}, peak RSS ${rssText(o)} vs ${rssText(theirs)}`,
    );
  }
} finally {
  await op.close();
  rmSync(work, { recursive: true, force: true });
}
