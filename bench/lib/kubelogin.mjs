// The benchmark peer of clusterprofile-oidc: int128/kubelogin, built from the Go module proxy with the wrapper module
// bench/kubelogin (go.mod pins the version; go.sum is kubelogin's own go.sum plus kubelogin's hashes as the proxy
// served them: the checksum database is not reachable here, hence GONOSUMDB for that one module).
//
// Go writes only under the project's cache (test/e2e/controlplane/build.mjs: cacheRoot, goEnv), so every clone on
// the machine shares the module download and the build: the binary is <cacheRoot>/bench/kubelogin-<version>-<hash>/
// kubelogin, the hash over go.mod, go.sum and the build flags. It is rebuilt only when that key changes; a built
// binary is used even where Go is absent.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, goEnv } from '../../test/e2e/controlplane/build.mjs';

const moduleDir = fileURLToPath(new URL('../kubelogin/', import.meta.url));
const MODULE = 'github.com/int128/kubelogin';

function run(command, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/**
 * @param {{ log?: (line: string) => void }} [options]
 * @returns {Promise<{ bin: string, version: string, goVersion: string, built: boolean, seconds: number } | { skipped: string }>}
 *   `skipped` (with the reason) only when Go is missing and nothing is built yet; a failed build throws.
 */
export async function ensureKubelogin(options = {}) {
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const goMod = await readFile(join(moduleDir, 'go.mod'), 'utf8');
  const goSum = await readFile(join(moduleDir, 'go.sum'), 'utf8');
  const version = new RegExp(`^\\s*(?:require\\s+)?${MODULE.replaceAll('.', '\\.')}\\s+(v\\S+)`, 'm').exec(goMod)?.[1];
  if (version === undefined) throw new Error(`bench/kubelogin/go.mod does not require ${MODULE}`);
  const buildArgs = ['build', '-trimpath', `-ldflags=-s -w -X main.version=${version}`, '-o', 'OUT', MODULE];
  const key = createHash('sha256')
    .update(goMod)
    .update('\0')
    .update(goSum)
    .update('\0')
    .update(JSON.stringify(buildArgs))
    .digest('hex')
    .slice(0, 12);
  const dir = join(cacheRoot, 'bench', `kubelogin-${version}-${key}`);
  const bin = join(dir, 'kubelogin');
  const stampFile = join(dir, 'stamp.json');
  if (existsSync(bin) && existsSync(stampFile)) {
    const stamp = JSON.parse(await readFile(stampFile, 'utf8'));
    return { bin, version, goVersion: stamp.goVersion, built: false, seconds: 0 };
  }

  const env = { ...goEnv({ ...process.env, GONOSUMDB: MODULE }), GOWORK: 'off' };
  let goVersion;
  try {
    const result = await run('go', ['env', 'GOVERSION'], { env });
    if (result.code !== 0) return { skipped: `\`go env GOVERSION\` failed: ${result.stderr.trim()}` };
    goVersion = result.stdout.trim();
  } catch (error) {
    if (error?.code === 'ENOENT')
      return { skipped: `Go is not on PATH (building kubelogin ${version} needs Go >= 1.24.5; https://go.dev/dl/)` };
    throw error;
  }

  const started = performance.now();
  log(`kubelogin: building ${version} with ${goVersion} -> ${dir}`);
  const staging = `${dir}.tmp-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  const args = buildArgs.map((a) => (a === 'OUT' ? join(staging, 'kubelogin') : a));
  const result = await run('go', args, { cwd: moduleDir, env });
  if (result.code !== 0) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(`kubelogin: go ${args.join(' ')} failed (exit ${result.code ?? result.signal}):\n${result.stderr}`);
  }
  const seconds = Math.round((performance.now() - started) / 100) / 10;
  await writeFile(
    join(staging, 'stamp.json'),
    `${JSON.stringify({ module: MODULE, version, goVersion, seconds, builtAt: new Date().toISOString() }, null, 2)}\n`,
  );
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  log(`kubelogin: built ${version} in ${seconds}s`);
  return { bin, version, goVersion, built: true, seconds };
}
