#!/usr/bin/env node
/**
 * Builds what the e2e tests run, from Go modules, into a git-ignored cache: etcd, kube-apiserver,
 * kube-controller-manager (wrapper modules next to this file), Dex (test/e2e/dex), the Go reference client
 * (test/e2e/goclient), the differential driver (test/e2e/differential), upstream's secretreader and
 * kubeconfig-secretreader plugins (test/e2e/upstream-plugins) and Open Cluster Management's registration hub,
 * cluster-proxy addon-manager, managed-serviceaccount and cp-creds (test/e2e/ocm, cluster-proxy, managed-serviceaccount).
 *
 *   npm run controlplane:build          # prints the binary paths and versions
 *
 * Everything Go writes stays under one cache directory outside the clone, so a second clone (CI on the same machine)
 * reuses a build that took many minutes: $CPC_CACHE_DIR, else $XDG_CACHE_HOME/clusterprofile-credentials, else
 * ~/.cache/clusterprofile-credentials (GOMODCACHE=<cache>/go/mod, GOCACHE=<cache>/go/build, binaries in
 * <cache>/controlplane/<target>-<version>-<hash>/). Removing that directory resets it.
 * A target is rebuilt only when its key changes: the module version read from its go.mod plus a hash of go.mod,
 * go.sum, its Go sources and the build flags. A second run builds nothing.
 *
 * Go is required (the minimum is the highest `go` directive of the modules built). Without it this fails loudly:
 * the e2e layer is never skipped silently.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../../..');
/** Outside the clone: a fresh clone of the repository reuses the Go builds of the previous one. */
export const cacheRoot = path.resolve(
  process.env.CPC_CACHE_DIR ||
    path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'clusterprofile-credentials'),
);

/** Thrown when Go is missing or too old; the message is what the user sees. */
export class GoRequirementError extends Error {
  name = 'GoRequirementError';
}

/**
 * @typedef {object} Target
 * @property {string} name
 * @property {string} moduleDir absolute path of the Go module to build in
 * @property {(goMod: string) => string} version the version this target stands for, read from its go.mod
 * @property {string[]} binaries output file names
 * @property {(version: string) => string[]} buildArgs arguments after `go build`, with `-o` pointing at OUT
 */

/** @type {Target[]} */
const targets = [
  {
    name: 'etcd',
    moduleDir: path.join(here, 'etcd'),
    version: (goMod) => requiredVersion(goMod, 'go.etcd.io/etcd/server/v3'),
    binaries: ['etcd'],
    buildArgs: () => ['-ldflags=-s -w', '-o', 'OUT/etcd', 'go.etcd.io/etcd/server/v3'],
  },
  {
    name: 'kubernetes',
    moduleDir: path.join(here, 'kubernetes'),
    version: (goMod) => requiredVersion(goMod, 'k8s.io/kubernetes'),
    binaries: ['kube-apiserver', 'kube-controller-manager'],
    buildArgs: (version) => {
      const [major, minor] = version.replace(/^v/, '').split('.');
      // What hack/lib/version.sh stamps in; without it the binaries report v0.0.0-master.
      const pkg = 'k8s.io/component-base/version';
      const ldflags = [
        '-s -w',
        `-X ${pkg}.gitVersion=${version}`,
        `-X ${pkg}.gitMajor=${major}`,
        `-X ${pkg}.gitMinor=${minor}`,
        `-X ${pkg}.gitTreeState=clean`,
      ].join(' ');
      return [
        `-ldflags=${ldflags}`,
        '-o',
        'OUT/',
        'k8s.io/kubernetes/cmd/kube-apiserver',
        'k8s.io/kubernetes/cmd/kube-controller-manager',
      ];
    },
  },
  {
    // The second real OpenID Provider of the e2e layer: Dex's server package started by test/e2e/dex/main.go
    // (test/helpers/dex.ts runs it). The pseudo-version is stamped in as its version.
    name: 'dex',
    moduleDir: path.resolve(here, '../dex'),
    version: (goMod) => requiredVersion(goMod, 'github.com/dexidp/dex'),
    binaries: ['dex'],
    buildArgs: (version) => [`-ldflags=-s -w -X main.version=${version}`, '-o', 'OUT/dex', '.'],
  },
  {
    name: 'goclient',
    moduleDir: path.resolve(here, '../goclient'),
    version: (goMod) => requiredVersion(goMod, 'sigs.k8s.io/cluster-inventory-api'),
    binaries: ['goclient'],
    buildArgs: () => ['-ldflags=-s -w', '-o', 'OUT/goclient', '.'],
  },
  {
    name: 'differential',
    moduleDir: path.resolve(here, '../differential'),
    version: (goMod) => requiredVersion(goMod, 'sigs.k8s.io/cluster-inventory-api'),
    binaries: ['differential'],
    buildArgs: () => ['-ldflags=-s -w', '-o', 'OUT/differential', '.'],
  },
  {
    // client-go's clientcmd loading rules for the kubeconfig fuzz target (test/fuzz/kubeconfig-target.ts).
    name: 'kubeconfig-differential',
    moduleDir: path.resolve(here, '../kubeconfig-differential'),
    version: (goMod) => requiredVersion(goMod, 'k8s.io/client-go'),
    binaries: ['kubeconfig-differential'],
    buildArgs: () => ['-ldflags=-s -w', '-o', 'OUT/kubeconfig-differential', '.'],
  },
  // Upstream's reader plugins, unchanged: what reads the Secrets `clusterprofile token sync` writes. Two targets of one
  // wrapper module, because both packages are named `plugin`.
  ...['secretreader', 'kubeconfig-secretreader'].map((plugin) => ({
    name: plugin,
    moduleDir: path.resolve(here, '../upstream-plugins'),
    version: (goMod) => requiredVersion(goMod, 'sigs.k8s.io/cluster-inventory-api'),
    binaries: [`${plugin}-plugin`],
    buildArgs: () => [
      '-ldflags=-s -w',
      '-o',
      `OUT/${plugin}-plugin`,
      `sigs.k8s.io/cluster-inventory-api/plugins/${plugin}/cmd/plugin`,
    ],
  })),
  {
    // Liqo v1.2.0's consumer-side handshake code (test/e2e/liqo), for test/e2e/tenant-cert-liqo.test.ts.
    name: 'liqo',
    moduleDir: path.resolve(here, '../liqo'),
    version: (goMod) => requiredVersion(goMod, 'github.com/liqotech/liqo'),
    binaries: ['liqo'],
    buildArgs: () => ['-ldflags=-s -w', '-o', 'OUT/liqo', '.'],
  },
  // Open Cluster Management's own code (test/e2e/ocm, test/e2e/cluster-proxy, test/e2e/managed-serviceaccount),
  // unchanged: the registration binary whose hub controller writes ClusterProfiles, cluster-proxy's addon-manager
  // (their access provider), managed-serviceaccount's manager (its ClusterProfile credential syncer) and cp-creds.
  {
    name: 'ocm-registration',
    moduleDir: path.resolve(here, '../ocm'),
    version: (goMod) => requiredVersion(goMod, 'open-cluster-management.io/ocm'),
    binaries: ['ocm-registration'],
    buildArgs: (version) => {
      // What OCM's Makefile stamps in; without it library-go's serving config cannot parse the version and panics.
      const [major, minor] = version.replace(/^v/, '').split('.');
      const pkg = 'open-cluster-management.io/ocm/pkg/version';
      const stamps = [`versionFromGit=${version}`, `majorFromGit=${major}`, `minorFromGit=${minor}`];
      const ldflags = ['-s -w', ...stamps.map((stamp) => `-X ${pkg}.${stamp}`)].join(' ');
      return [`-ldflags=${ldflags}`, '-o', 'OUT/ocm-registration', 'open-cluster-management.io/ocm/cmd/registration'];
    },
  },
  {
    name: 'cluster-proxy',
    moduleDir: path.resolve(here, '../cluster-proxy'),
    version: (goMod) => requiredVersion(goMod, 'open-cluster-management.io/cluster-proxy'),
    binaries: ['cluster-proxy-addon-manager'],
    buildArgs: () => [
      '-ldflags=-s -w',
      '-o',
      'OUT/cluster-proxy-addon-manager',
      'open-cluster-management.io/cluster-proxy/cmd/addon-manager',
    ],
  },
  ...[
    ['managed-serviceaccount', 'cmd'],
    ['clusterprofile-credentials-plugin', 'cmd/clusterprofile-credentials-plugin'],
  ].map(([binary, pkg]) => ({
    name: binary,
    moduleDir: path.resolve(here, '../managed-serviceaccount'),
    version: (goMod) => requiredVersion(goMod, 'open-cluster-management.io/managed-serviceaccount'),
    binaries: [binary],
    buildArgs: () => [
      '-ldflags=-s -w',
      '-o',
      `OUT/${binary}`,
      `open-cluster-management.io/managed-serviceaccount/${pkg}`,
    ],
  })),
];

function requiredVersion(goMod, modulePath) {
  const escaped = modulePath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const match = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, 'm').exec(goMod);
  if (match?.[1] === undefined) throw new Error(`${modulePath} is not required in go.mod`);
  return match[1];
}

function goDirective(goMod) {
  return /^go\s+(\d+\.\d+)(?:\.\d+)?\s*$/m.exec(goMod)?.[1] ?? '1.0';
}

function compareMinor(a, b) {
  const [aMajor = 0, aMinor = 0] = a.split('.').map(Number);
  const [bMajor = 0, bMinor = 0] = b.split('.').map(Number);
  return aMajor - bMajor || aMinor - bMinor;
}

/** Environment for every `go` call: caches in cacheRoot, no toolchain downloads, no cgo. */
export function goEnv(env = process.env) {
  return {
    ...env,
    GOMODCACHE: path.join(cacheRoot, 'go', 'mod'),
    GOCACHE: path.join(cacheRoot, 'go', 'build'),
    GOTOOLCHAIN: 'local',
    CGO_ENABLED: '0',
    // Module cache files are read-only by default, which makes `rm -rf` of the cache fail.
    GOFLAGS: [env.GOFLAGS ?? '', '-modcacherw'].join(' ').trim(),
  };
}

function run(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      options.onStderr?.(String(chunk));
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** `go env GOVERSION` as "1.26", or a GoRequirementError saying what is needed. */
async function checkGo(minimum) {
  const requirement = `Go >= ${minimum} is required to build the e2e control plane (kube-apiserver, etcd, the Go client)`;
  let result;
  try {
    result = await run('go', ['env', 'GOVERSION'], { env: goEnv() });
  } catch (error) {
    if (error?.code === 'ENOENT') {
      throw new GoRequirementError(
        `${requirement}, but \`go\` was not found on PATH. Install it from https://go.dev/dl/.`,
      );
    }
    throw error;
  }
  const found = /go(\d+\.\d+)/.exec(result.stdout)?.[1];
  if (result.code !== 0 || found === undefined) {
    throw new GoRequirementError(`${requirement}, but \`go env GOVERSION\` failed: ${result.stderr.trim()}`);
  }
  if (compareMinor(found, minimum) < 0) {
    throw new GoRequirementError(`${requirement}, but found go${found}. Install a newer Go from https://go.dev/dl/.`);
  }
  return result.stdout.trim();
}

async function sourceHash(target, version) {
  const hash = createHash('sha256');
  const files = (await readdir(target.moduleDir)).filter((f) => f === 'go.mod' || f === 'go.sum' || f.endsWith('.go'));
  for (const file of files.sort()) {
    hash.update(`${file}\0`);
    hash.update(await readFile(path.join(target.moduleDir, file)));
  }
  hash.update(JSON.stringify(target.buildArgs(version)));
  return hash.digest('hex').slice(0, 12);
}

async function readStamp(dir) {
  try {
    return JSON.parse(await readFile(path.join(dir, 'stamp.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

async function binaryVersion(file) {
  const name = path.basename(file);
  if (
    ['goclient', 'liqo', 'managed-serviceaccount', 'cluster-proxy-addon-manager'].includes(name) ||
    name.endsWith('differential') ||
    name.endsWith('-plugin')
  )
    return undefined;
  const result = await run(file, name === 'dex' ? ['version'] : ['--version']);
  const text = (result.stdout + result.stderr).trim();
  if (name === 'etcd') return /etcd Version:\s*(\S+)/.exec(text)?.[1] ?? text;
  if (name === 'dex') return `dex ${/Dex Version:\s*(\S+)/.exec(text)?.[1] ?? text}`;
  return text;
}

/**
 * @typedef {object} ControlPlaneBinaries
 * @property {string} etcd
 * @property {string} kubeApiserver
 * @property {string} kubeControllerManager
 * @property {string} dex
 * @property {string} goclient
 * @property {string} differential
 * @property {string} kubeconfigDifferential
 * @property {string} secretreaderPlugin
 * @property {string} kubeconfigSecretreaderPlugin
 * @property {string} liqo
 * @property {string} ocmRegistration
 * @property {string} clusterProxyAddonManager
 * @property {string} managedServiceAccount
 * @property {string} cpCredsPlugin
 * @property {Record<string, string>} versions binary name → version it reports
 * @property {Record<string, { built: boolean, seconds: number, dir: string }>} targets
 */

/**
 * Makes sure every binary is built, building only what is missing or out of date.
 * @param {{ log?: (line: string) => void, env?: NodeJS.ProcessEnv, only?: string[] }} [options] `only`: these targets (`etcd`, `kubernetes`, …), the others' paths left empty
 * @returns {Promise<ControlPlaneBinaries>}
 */
export async function ensureControlPlaneBinaries(options = {}) {
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const goMods = await Promise.all(targets.map((t) => readFile(path.join(t.moduleDir, 'go.mod'), 'utf8')));
  const minimum = goMods.map(goDirective).sort(compareMinor).at(-1) ?? '1.24';
  const env = goEnv(options.env);
  let goVersion;

  /** @type {Record<string, string>} */
  const paths = {};
  /** @type {Record<string, string>} */
  const versions = {};
  /** @type {ControlPlaneBinaries['targets']} */
  const report = {};
  for (const [index, target] of targets.entries()) {
    if (options.only !== undefined && !options.only.includes(target.name)) continue;
    const version = target.version(goMods[index] ?? '');
    const dir = path.join(cacheRoot, 'controlplane', `${target.name}-${version}-${await sourceHash(target, version)}`);
    const stamp = await readStamp(dir);
    const complete = stamp !== undefined && target.binaries.every((b) => existsSync(path.join(dir, b)));
    const started = performance.now();
    if (!complete) {
      // Checked only when there is something to build: a warm cache runs on a machine without Go.
      goVersion ??= await checkGo(minimum);
      log(`controlplane: building ${target.name} ${version} with ${goVersion} (cold: many minutes) -> ${dir}`);
      const staging = `${dir}.tmp-${process.pid}`;
      await rm(staging, { recursive: true, force: true });
      await mkdir(staging, { recursive: true });
      const args = ['build', '-trimpath', ...target.buildArgs(version).map((a) => a.replace(/^OUT\//, `${staging}/`))];
      const result = await run('go', args, { cwd: target.moduleDir, env });
      if (result.code !== 0) {
        await rm(staging, { recursive: true, force: true });
        throw new Error(
          `controlplane: go ${args.join(' ')} failed (exit ${result.code ?? result.signal}):\n${result.stderr}`,
        );
      }
      const built = {};
      for (const b of target.binaries) built[b] = await binaryVersion(path.join(staging, b));
      const seconds = Math.round((performance.now() - started) / 100) / 10;
      await writeFile(
        path.join(staging, 'stamp.json'),
        `${JSON.stringify(
          { target: target.name, version, goVersion, seconds, builtAt: new Date().toISOString(), binaries: built },
          null,
          2,
        )}\n`,
      );
      await rm(dir, { recursive: true, force: true });
      await rename(staging, dir);
      log(`controlplane: built ${target.name} ${version} in ${seconds}s`);
    }
    const finalStamp = await readStamp(dir);
    for (const b of target.binaries) {
      paths[b] = path.join(dir, b);
      const v = finalStamp?.binaries?.[b];
      if (typeof v === 'string') versions[b] = v;
    }
    report[target.name] = { built: !complete, seconds: Math.round((performance.now() - started) / 100) / 10, dir };
  }
  return {
    etcd: paths.etcd ?? '',
    kubeApiserver: paths['kube-apiserver'] ?? '',
    kubeControllerManager: paths['kube-controller-manager'] ?? '',
    dex: paths.dex ?? '',
    goclient: paths.goclient ?? '',
    differential: paths.differential ?? '',
    kubeconfigDifferential: paths['kubeconfig-differential'] ?? '',
    secretreaderPlugin: paths['secretreader-plugin'] ?? '',
    kubeconfigSecretreaderPlugin: paths['kubeconfig-secretreader-plugin'] ?? '',
    liqo: paths.liqo ?? '',
    ocmRegistration: paths['ocm-registration'] ?? '',
    clusterProxyAddonManager: paths['cluster-proxy-addon-manager'] ?? '',
    managedServiceAccount: paths['managed-serviceaccount'] ?? '',
    cpCredsPlugin: paths['clusterprofile-credentials-plugin'] ?? '',
    versions,
    targets: report,
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const started = performance.now();
  try {
    const result = await ensureControlPlaneBinaries();
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    process.stderr.write(`controlplane: done in ${Math.round(performance.now() - started) / 1000}s\n`);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
