// clusterprofile-tenant-cert against a real issuer (built CLI: keygen, issuer serve, issuer trust from a fresh data dir):
//  1. cache miss against the warm issuer (the full handshake: nonce -> CSR -> Tenant -> Identity, an empty cache
//     directory every run): wall, CPU and peak RSS beside `node -e 0`, interleaved (bench/lib/miss.mjs; targets
//     <= 1.3x the bare node:https floor's wall, peak RSS <= the floor's + 3 MiB);
//  2. cache hit: the issuer is STOPPED first (so every measured run is provably a cache hit), then `node -e 0` and the
//     plugin (with and without the compile cache) run interleaved (bench/lib/startup.mjs; target <= 1.2x node -e 0).
// Targets are reported MET / NOT MET and do not fail the run. Needs `npm run build` first. CPC_BENCH_BASELINE=<dir>
// runs that build's plugin beside this one (bench/lib/miss.mjs).
//
//   npm exec -- node bench/tenant-cert.bench.mjs [runs]
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BASELINE_ROOT, compareMisses, FLOOR_NAME, floorCommand, judgeMiss } from './lib/miss.mjs';
import { PLUGIN_TARGETS } from './lib/report.mjs';
import { compareStartup } from './lib/startup.mjs';

const runs = Number(process.argv[2] ?? 40);
const root = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(root, 'bin', 'clusterprofile.mjs');
const PLUGIN = join(root, 'bin', 'clusterprofile-tenant-cert.mjs');
if (!existsSync(join(root, 'dist', 'bin', 'clusterprofile-tenant-cert.mjs')))
  throw new Error('run `npm run build` first');

const work = mkdtempSync(join(tmpdir(), 'cpc-bench-tenant-cert-'));
const baseEnv = { PATH: process.env.PATH, HOME: work, NODE_COMPILE_CACHE: join(work, 'compile-cache') };

function cli(...args) {
  const result = spawnSync(process.execPath, [CLI, ...args], { env: baseEnv, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`clusterprofile ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

// Provider side: a fresh issuer.
const dataDir = join(work, 'data');
const keyFile = join(work, 'consumer.key');
writeFileSync(join(work, 'consumer.pub'), cli('keygen', '--out', keyFile));
const issuer = spawn(
  process.execPath,
  [CLI, 'issuer', 'serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--cluster-id', 'member-1'],
  {
    env: baseEnv,
    stdio: ['ignore', 'pipe', 'ignore'],
  },
);
// A failed measurement must not leave the issuer running.
process.on('exit', () => issuer.kill('SIGTERM'));
const issuerURL = await new Promise((resolve, reject) => {
  let out = '';
  issuer.stdout.setEncoding('utf8').on('data', (chunk) => {
    out += chunk;
    const match = /https:\/\/127\.0\.0\.1:\d+/.exec(out);
    if (match) resolve(match[0]);
  });
  issuer.on('exit', (code) => reject(new Error(`issuer exited with ${code}`)));
});
cli('issuer', 'trust', '--data-dir', dataDir, '--cluster-id', 'consumer-1', '--public-key', join(work, 'consumer.pub'));

// Consumer side: the plugin as kubectl runs it.
const execInfo = JSON.stringify({
  kind: 'ExecCredential',
  apiVersion: 'client.authentication.k8s.io/v1',
  spec: {
    interactive: false,
    cluster: {
      server: 'https://member-1.example:6443',
      config: {
        issuerURL,
        issuerCA: readFileSync(join(dataDir, 'serving-ca.crt')).toString('base64'),
        providerClusterID: 'member-1',
      },
    },
  },
});
const pluginArgsFor = (cacheDir, plugin = PLUGIN) => [
  plugin,
  '--cluster-id',
  'consumer-1',
  '--key-file',
  keyFile,
  '--cache-dir',
  cacheDir,
  '--identity-dir',
  join(work, 'ids'),
];
const pluginArgs = pluginArgsFor(join(work, 'cache'));
const env = { ...baseEnv, KUBERNETES_EXEC_INFO: execInfo };

const coldStart = process.hrtime.bigint();
const cold = spawnSync(process.execPath, pluginArgs, { env, encoding: 'utf8' });
const coldMs = Number(process.hrtime.bigint() - coldStart) / 1e6;
if (cold.status !== 0 || !cold.stdout.includes('clientCertificateData'))
  throw new Error(`cold run failed: ${cold.stderr}`);
console.log(`cold run (first handshake with a fresh issuer): ${coldMs.toFixed(0)} ms`);

// 1. Misses against the warm issuer (a separate process): every run must bring back a certificate not seen before.
const seen = new Set([JSON.parse(cold.stdout).status.clientCertificateData]);
// The floor: the handshake's two POSTs (nonce, then Tenant) over one connection from a bare node:https script, with
// bodies of about the real size; they are not signed, so the issuer refuses them (400) after parsing — its signing
// work is not in the floor.
const issuerCaFile = join(work, 'issuer-ca.pem');
writeFileSync(issuerCaFile, readFileSync(join(dataDir, 'serving-ca.crt')));
const floorPost = (path, bytes) => ({
  url: `${issuerURL}${path}`,
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json' },
  body: JSON.stringify({ padding: 'x'.repeat(bytes) }),
});
const floorRequests = [floorPost('/v1/nonces', 400), floorPost('/v1/tenants', 2000)];
// The issuer's own time per request, from its handshake-duration histogram (GET /metrics), per step and result: the
// plugin's handshakes are answered `ok`, the floor's unsigned POSTs `refused` after parsing. A miss waits for the
// issuer's checks, signing and nonce journal; the floor does not make it do that work.
async function issuerDurations() {
  const https = await import('node:https');
  const text = await new Promise((resolve, reject) => {
    https
      .get(`${issuerURL}/metrics`, { ca: readFileSync(issuerCaFile) }, (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk) => (body += chunk));
        response.on('end', () =>
          response.statusCode === 200 ? resolve(body) : reject(new Error(`GET /metrics: HTTP ${response.statusCode}`)),
        );
      })
      .on('error', reject);
  });
  const series = {};
  for (const match of text.matchAll(
    /^clusterprofile_issuer_handshake_duration_seconds_(sum|count)\{step="(\w+)",result="(\w+)"\} (\S+)$/gm,
  )) {
    const key = `${match[2]} ${match[3]}`;
    series[key] ??= { sum: 0, count: 0 };
    series[key][match[1]] = Number(match[4]);
  }
  return series;
}
const durationsBefore = await issuerDurations();

let fresh = 0;
let missRuns = 0;
const misses = await compareMisses({
  title: 'tenant-cert cache miss against the warm issuer (a handshake every run) vs node -e 0',
  commands: {
    'node -e 0': () => [process.execPath, ['-e', '0']],
    [FLOOR_NAME]: floorCommand(issuerCaFile, floorRequests),
    'tenant-cert (cache miss)': () => {
      const dir = join(work, `miss-cache-${fresh++}`);
      mkdirSync(dir, { mode: 0o700 });
      return [process.execPath, pluginArgsFor(dir)];
    },
    ...(BASELINE_ROOT === undefined
      ? {}
      : {
          'tenant-cert (cache miss, baseline)': () => {
            const dir = join(work, `miss-cache-${fresh++}`);
            mkdirSync(dir, { mode: 0o700 });
            return [process.execPath, pluginArgsFor(dir, join(BASELINE_ROOT, 'bin', 'clusterprofile-tenant-cert.mjs'))];
          },
        }),
  },
  env,
  rounds: Math.min(runs, 15),
  work,
  check: (name, stdout) => {
    if (name === 'node -e 0') return;
    if (name === FLOOR_NAME) {
      if (stdout.trim() !== '[400,400]')
        throw new Error(`${name}: the issuer answered ${stdout.trim()}, not [400,400]`);
      return;
    }
    const certificate = JSON.parse(stdout).status?.clientCertificateData;
    if (typeof certificate !== 'string' || seen.has(certificate))
      throw new Error(`${name}: not a newly issued certificate`);
    seen.add(certificate);
    missRuns += 1;
  },
});
console.log(`  distinct certificates issued during the measurement: ${missRuns} (every plugin run was a miss)`);
{
  const after = await issuerDurations();
  const perRequest = (step, result) => {
    const none = { sum: 0, count: 0 };
    const [end, start] = [after[`${step} ${result}`] ?? none, durationsBefore[`${step} ${result}`] ?? none];
    const count = end.count - start.count;
    return { count, ms: count === 0 ? 0 : ((end.sum - start.sum) * 1000) / count };
  };
  const [nonceOk, tenantOk, nonceRefused, tenantRefused] = [
    perRequest('nonce', 'ok'),
    perRequest('tenant', 'ok'),
    perRequest('nonce', 'refused'),
    perRequest('tenant', 'refused'),
  ];
  const handshakeMs = nonceOk.ms + tenantOk.ms;
  const floorMs = nonceRefused.ms + tenantRefused.ms;
  console.log(
    `  the issuer's own time per request (its handshake-duration histogram, every run of this measurement${BASELINE_ROOT === undefined ? '' : ", the baseline's included"}): ` +
      `a plugin's handshake nonce ${nonceOk.ms.toFixed(1)} + tenant ${tenantOk.ms.toFixed(1)} = ${handshakeMs.toFixed(1)} ms (${tenantOk.count} handshakes); ` +
      `the floor's refused POSTs ${nonceRefused.ms.toFixed(1)} + ${tenantRefused.ms.toFixed(1)} = ${floorMs.toFixed(1)} ms (${tenantRefused.count} runs)`,
  );
  const miss = misses['tenant-cert (cache miss)'].wall.median;
  const floor = misses[FLOOR_NAME].wall.median;
  console.log(
    `  of the miss's ${(miss - floor).toFixed(1)} ms over its floor (medians), ${(handshakeMs - floorMs).toFixed(1)} ms is the issuer's work that the floor does not make it do`,
  );
}
if (!judgeMiss('tenant-cert cache miss', misses['tenant-cert (cache miss)'], misses[FLOOR_NAME]).measured)
  process.exitCode = 1;

// 2. No issuer from here on: every measured run must be served from the cache.
issuer.kill('SIGTERM');
await new Promise((resolve) => issuer.once('exit', resolve));

compareStartup({
  title: 'tenant-cert cache hit vs node -e 0 (issuer stopped)',
  commands: {
    'node -e 0': [process.execPath, ['-e', '0'], {}],
    'tenant-cert (cache hit)': [process.execPath, pluginArgs, {}],
    'tenant-cert, no compile cache': [process.execPath, pluginArgs, { NODE_DISABLE_COMPILE_CACHE: '1' }],
    ...(BASELINE_ROOT === undefined
      ? {}
      : {
          'tenant-cert (cache hit, baseline)': [
            process.execPath,
            pluginArgsFor(join(work, 'cache'), join(BASELINE_ROOT, 'bin', 'clusterprofile-tenant-cert.mjs')),
            {},
          ],
        }),
  },
  env,
  runs,
  subject: 'tenant-cert (cache hit)',
  target: PLUGIN_TARGETS.hitRatio,
  what: 'tenant-cert cache hit wall / node -e 0 wall',
  check: (name, result) => {
    if (name !== 'node -e 0' && result.stdout !== cold.stdout) throw new Error(`${name}: not the cached credential`);
  },
});
rmSync(work, { recursive: true, force: true });
