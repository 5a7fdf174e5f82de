// clusterprofile-tenant-cert on a cache hit against `node -e 0`, side by side (target: ratio <= 1.3).
//
// Sets up a real issuer from a fresh data dir (built CLI: keygen, issuer serve, issuer trust), runs the plugin once
// to obtain a certificate (cold: handshake), STOPS the issuer (so every measured run is provably a cache hit), then
// runs `node -e 0` and the plugin interleaved N times each. Prints medians, p90, the ratio of medians, and the mean
// child CPU time (less disturbed by a busy machine than wall time). Needs `npm run build` first.
//
//   npm exec -- node bench/tenant-cert.bench.mjs [runs]
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const runs = Number(process.argv[2] ?? 40);
const root = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(root, 'bin', 'clusterprofile.mjs');
const PLUGIN = join(root, 'bin', 'clusterprofile-tenant-cert.mjs');
if (!existsSync(join(root, 'dist', 'bin', 'clusterprofile-tenant-cert.mjs'))) throw new Error('run `npm run build` first');

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
const issuer = spawn(process.execPath, [CLI, 'issuer', 'serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--cluster-id', 'member-1'], {
  env: baseEnv,
  stdio: ['ignore', 'pipe', 'ignore'],
});
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
      config: { issuerURL, issuerCA: readFileSync(join(dataDir, 'serving-ca.crt')).toString('base64'), providerClusterID: 'member-1' },
    },
  },
});
const pluginArgs = [PLUGIN, '--cluster-id', 'consumer-1', '--key-file', keyFile, '--cache-dir', join(work, 'cache'), '--identity-dir', join(work, 'ids')];
const env = { ...baseEnv, KUBERNETES_EXEC_INFO: execInfo };

const coldStart = process.hrtime.bigint();
const cold = spawnSync(process.execPath, pluginArgs, { env, encoding: 'utf8' });
const coldMs = Number(process.hrtime.bigint() - coldStart) / 1e6;
if (cold.status !== 0 || !cold.stdout.includes('clientCertificateData')) throw new Error(`cold run failed: ${cold.stderr}`);

// No issuer from here on: every measured run must be served from the cache.
issuer.kill('SIGTERM');
await new Promise((resolve) => issuer.once('exit', resolve));

const commands = {
  'node -e 0': [process.execPath, ['-e', '0'], {}],
  'tenant-cert (cache hit)': [process.execPath, pluginArgs, {}],
  'tenant-cert, no compile cache': [process.execPath, pluginArgs, { NODE_DISABLE_COMPILE_CACHE: '1' }],
};

const TICK_MS = 10;
function childCpuTicks() {
  if (!existsSync('/proc/self/stat')) return undefined;
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return Number(fields[13]) + Number(fields[14]);
}
const cpuTicks = {};

function once(name, [command, args, extra]) {
  const ticks = childCpuTicks();
  const start = process.hrtime.bigint();
  const result = spawnSync(command, args, { env: { ...env, ...extra }, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0) throw new Error(`${name} failed: ${result.stderr}`);
  if (name !== 'node -e 0' && result.stdout !== cold.stdout) throw new Error(`${name}: not the cached credential`);
  if (ticks !== undefined) cpuTicks[name] = (cpuTicks[name] ?? 0) + childCpuTicks() - ticks;
  return ms;
}

// Warm-up (page cache, compile cache), not measured.
for (const [name, command] of Object.entries(commands)) for (let i = 0; i < 3; i++) once(name, command);
for (const name of Object.keys(cpuTicks)) cpuTicks[name] = 0;

const samples = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
for (let i = 0; i < runs; i++) {
  for (const [name, command] of Object.entries(commands)) samples[name].push(once(name, command));
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const median = (name) => quantile(samples[name], 0.5);

console.log(`tenant-cert plugin, cache hit vs node -e 0 (${runs} interleaved runs each; issuer stopped; cold run with handshake: ${coldMs.toFixed(0)} ms)`);
console.log(`${'command'.padEnd(32)}${'median ms'.padStart(11)}${'p90 ms'.padStart(9)}${'cpu ms/run'.padStart(12)}`);
for (const name of Object.keys(commands)) {
  const cpu = cpuTicks[name] === undefined ? '' : ((cpuTicks[name] * TICK_MS) / runs).toFixed(1);
  console.log(`${name.padEnd(32)}${median(name).toFixed(1).padStart(11)}${quantile(samples[name], 0.9).toFixed(1).padStart(9)}${cpu.padStart(12)}`);
}
const ratio = median('tenant-cert (cache hit)') / median('node -e 0');
const cpuRatio = cpuTicks['node -e 0'] > 0 ? cpuTicks['tenant-cert (cache hit)'] / cpuTicks['node -e 0'] : Number.NaN;
console.log(`ratio of medians (cache hit / node -e 0): ${ratio.toFixed(2)}x  (target <= 1.3x)${ratio <= 1.3 ? '' : '  ABOVE TARGET'}`);
console.log(`ratio of CPU time: ${cpuRatio.toFixed(2)}x`);
