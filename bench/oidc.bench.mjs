// Benchmarks of clusterprofile-oidc against the real test OpenID Provider (test/helpers/oidc-op.ts):
//  1. cache-hit wall and CPU time of the built plugin vs `node -e 0`, side by side, interleaved (bench/lib/startup.mjs;
//     target <= 1.3x);
//  2. token acquisition from a warm provider: ms per client_credentials grant, in process (discovery + JWKS +
//     grant + validation, as issue() does on a cache miss) and as a whole plugin run with --force-refresh.
// Run after `npm run build`, with Node 24: `npm exec -- node bench/oidc.bench.mjs [runs]` (default 30; or env RUNS).
// OIDC_PLUGIN_BIN measures another build of the plugin.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { compareStartup } from './lib/startup.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = process.env.OIDC_PLUGIN_BIN ?? join(root, 'bin/clusterprofile-oidc.mjs');
const runs = Number(process.argv[2] ?? process.env.RUNS ?? 30);
const work = mkdtempSync(join(tmpdir(), 'cpc-oidc-bench-'));

// The test OP is TypeScript: bundle it with esbuild into node_modules/.cache (so its external packages resolve from
// the project) and import it. @peculiar/x509 is bundled so the Reflect shim runs before it.
const opBundle = join(root, 'node_modules/.cache/clusterprofile-bench/oidc-op.mjs');
await build({
  entryPoints: [join(root, 'test/helpers/oidc-op.ts')],
  outfile: opBundle,
  bundle: true,
  platform: 'node',
  format: 'esm',
  external: ['oidc-provider', 'jose', 'undici'],
  banner: { js: "import { createRequire as __cpcCreateRequire } from 'node:module'; const require = __cpcCreateRequire(import.meta.url);" },
  absWorkingDir: root,
  logLevel: 'warning',
});
const { startTestOpenIdProvider } = await import(pathToFileURL(opBundle).href);

const op = await startTestOpenIdProvider();
const secretFile = join(work, 'secret');
writeFileSync(secretFile, op.clients.basic.clientSecret, { mode: 0o600 });
const cacheDir = join(work, 'cache');
const config = { issuerURL: op.issuer, issuerCA: op.caBase64, clientID: op.clients.basic.clientId, audience: op.audience };
const execInfo = JSON.stringify({ kind: 'ExecCredential', apiVersion: 'client.authentication.k8s.io/v1', spec: { interactive: false, cluster: { server: 'https://k8s.test', config } } });
const env = { PATH: process.env.PATH, HOME: work, KUBERNETES_EXEC_INFO: execInfo, NODE_COMPILE_CACHE: join(work, 'compile-cache') };
const pluginArgs = [bin, '--client-secret-file', secretFile, '--cache-dir', cacheDir];

// The OP lives in this event loop: runs that talk to it are spawned asynchronously.
async function timeAsync(args) {
  const { spawn } = await import('node:child_process');
  const start = process.hrtime.bigint();
  await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`plugin failed: ${stderr}`))));
  });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
const fmt = (x) => x.toFixed(1).padStart(7);

try {
  // Fill the cache (one grant; the OP lives in this event loop, so asynchronously), then the shared side-by-side
  // harness (interleaved rounds, wall and child CPU time, ratio to node -e 0).
  await timeAsync(pluginArgs);
  const grantsBefore = op.grants.length;
  compareStartup({
    title: 'clusterprofile-oidc cache hit vs node -e 0',
    commands: { 'node -e 0': [process.execPath, ['-e', '0']], 'oidc (cache hit)': [process.execPath, pluginArgs] },
    env,
    runs,
    subject: 'oidc (cache hit)',
    target: 1.3,
  });
  console.log(`token requests during the measurement: ${op.grants.length - grantsBefore} (every run was a cache hit)`);

  // Token acquisition, in process, from the compiled library (dist/): discovery + JWKS + grant + validation.
  const { issueOidcToken } = await import(pathToFileURL(join(root, 'dist/providers/oidc/issue.js')).href);
  const { parseOidcSettings } = await import(pathToFileURL(join(root, 'dist/providers/oidc/settings.js')).href);
  const flags = { 'client-secret-file': secretFile, 'open-browser': false };
  const settings = parseOidcSettings(JSON.parse(execInfo), flags);
  const context = () => ({ now: () => new Date(), interactive: false, stdin: Readable.from([]), stderr: new PassThrough(), signal: new AbortController().signal, env: {}, previous: undefined });
  const before = op.grants.length;
  for (let i = 0; i < 5; i += 1) await issueOidcToken(settings, context());
  const grantMs = [];
  for (let i = 0; i < runs; i += 1) {
    const start = process.hrtime.bigint();
    await issueOidcToken(settings, context());
    grantMs.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const grants = op.grants.length - before;
  console.log(`oidc token acquisition from a warm OP (client_credentials, client_secret_basic), ${runs} runs`);
  console.log(`  in process (discovery + JWKS + grant + validation, new TLS connection each)  median ${fmt(median(grantMs))}  p90 ${fmt(p90(grantMs))} ms`);

  const forced = [];
  for (let i = 0; i < Math.min(runs, 15); i += 1) forced.push(await timeAsync([...pluginArgs, '--force-refresh']));
  console.log(`  whole plugin run with --force-refresh (process start + grant + cache write)  median ${fmt(median(forced))}  p90 ${fmt(p90(forced))} ms`);
  console.log(`  grants seen by the OP: ${grants} in process (expected ${runs + 5})`);
} finally {
  await op.close();
  rmSync(work, { recursive: true, force: true });
}
