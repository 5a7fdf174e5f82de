#!/usr/bin/env node
/**
 * The unit and integration layers on the oldest Node.js the package claims (package.json `engines`, e.g.
 * `>=22.19.0` → npm's `node@22.19.0`), so the floor we claim is the floor we test. `npm test` runs it after the
 * main run on Node 24; `npm run test:floor` runs it alone (after a build).
 *
 *   node scripts/test-node-floor.mjs [vitest args...]     # default: --project unit --project integration
 *
 * The floor's Node comes from npm's `node` package, installed once into the cache outside the clone that the e2e
 * builds use (test/e2e/controlplane/build.mjs: $CPC_CACHE_DIR, else ~/.cache/clusterprofile-credentials), under
 * node/node-<version>/. Vitest runs on it, and its directory is first on PATH, so the children the tests start (the
 * bins' `#!/usr/bin/env node`, npm, kubectl's exec of a plugin) run on it too; CPC_TEST_NODE tells the tests which
 * version they must find (test/unit/test-node.test.ts checks both).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cacheRoot } from '../test/e2e/controlplane/build.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The version in package.json's `engines.node` (`>=X.Y.Z`). */
export async function floorVersion() {
  const manifest = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8'));
  const match = /^>=(\d+\.\d+\.\d+)$/.exec(manifest.engines?.node ?? '');
  if (match === null)
    throw new Error(`package.json engines.node is not ">=X.Y.Z": ${JSON.stringify(manifest.engines?.node)}`);
  return match[1];
}

function versionOf(node) {
  const result = spawnSync(node, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/**
 * The path of npm's `node@<version>` binary in the cache, installed there first if missing (a staging directory
 * renamed into place, so a second clone running at the same time never sees half an install).
 * @param {string} version
 * @param {{ log?: (line: string) => void }} [options]
 * @returns {Promise<string>}
 */
export async function ensureNpmNode(version, options = {}) {
  const dir = path.join(cacheRoot, 'node', `node-${version}`);
  const binary = (base) => path.join(base, 'node_modules', 'node', 'bin', 'node');
  if (versionOf(binary(dir)) === `v${version}`) return binary(dir);
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  log(`test-node-floor: installing npm's node@${version} into ${dir}`);
  const staging = `${dir}.tmp-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  await writeFile(path.join(staging, 'package.json'), JSON.stringify({ private: true }));
  // npm's registry and CA settings from the environment, without what `npm run` adds for its children; npm itself
  // runs on the Node that runs this script.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  env.PATH = `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`;
  const npm = spawnSync('npm', ['install', `node@${version}`, '--no-audit', '--no-fund', '--no-save'], {
    cwd: staging,
    env,
    encoding: 'utf8',
    timeout: 300_000,
  });
  const found = versionOf(binary(staging));
  if (npm.status !== 0 || found !== `v${version}`) {
    await rm(staging, { recursive: true, force: true });
    throw new Error(
      `test-node-floor: npm install node@${version} failed (exit ${npm.status ?? npm.signal}, found ${found ?? 'no node'}):\n${npm.stderr}`,
    );
  }
  if (existsSync(dir)) {
    // Another run installed it meanwhile; keep that one.
    await rm(staging, { recursive: true, force: true });
  } else {
    await rename(staging, dir);
  }
  return binary(dir);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const started = performance.now();
  const version = await floorVersion();
  const node = await ensureNpmNode(version);
  const args = process.argv.slice(2);
  const vitestArgs = ['run', ...(args.length === 0 ? ['--project', 'unit', '--project', 'integration'] : args)];
  process.stderr.write(`test-node-floor: vitest ${vitestArgs.join(' ')} on Node.js ${version} (${node})\n`);
  const child = spawn(node, [path.join(root, 'node_modules', 'vitest', 'vitest.mjs'), ...vitestArgs], {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH ?? ''}`,
      CPC_TEST_NODE: version,
    },
  });
  const forward = (signal) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  child.on('close', (code, signal) => {
    process.stderr.write(
      `test-node-floor: Node.js ${version}: ${code === 0 ? 'passed' : `failed (${code ?? signal})`} in ${Math.round(performance.now() - started) / 1000}s\n`,
    );
    process.exitCode = code ?? 1;
  });
}
