/**
 * The Node.js floor, on real Nodes: the machine's Node 20 (npm's `node@20` where the machine has none) is refused by
 * every binary and every entry point of the library at once, with ERR_NODE_VERSION naming both versions; npm's
 * `node@<floor>` (the exact floor, 22.19.0: installed once into the cache by scripts/test-node-floor.mjs, which also
 * runs the unit and integration layers on it) runs the binaries, a real cache miss of a plugin (the path that failed
 * deep inside undici on Node 20 when the plugins' HTTP went through it; it is the HTTP seam now) and the library. Needs
 * `npm run build` first.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_FLOOR } from '../../src/base/node-floor.js';
import { ensureNpmNode } from '../../scripts/test-node-floor.mjs';
import { startTestOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-op.js';
import { oidcExecInfo } from '../helpers/oidc-plugin.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};
const BINARIES = Object.keys(manifest.bin);
const work = mkdtempSync(join(tmpdir(), 'cpc-node-floor-'));
// npm's registry and CA settings from the environment, without what `npm run` adds for its children.
const npmEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name))),
  PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}`,
};

afterAll(() => rmSync(work, { recursive: true, force: true }));

function versionOf(node: string): string | undefined {
  try {
    return execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

/** npm's `node@<major>` package, installed into its own directory under the temp dir: the path of its node. */
function npmNode(major: number): string {
  const dir = join(work, `node${major}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true }));
  const result = spawnSync('npm', ['install', `node@${major}`, '--no-audit', '--no-fund'], {
    cwd: dir,
    env: npmEnv,
    encoding: 'utf8',
    timeout: 240_000,
  });
  expect(result.status, result.stderr).toBe(0);
  return join(dir, 'node_modules', '.bin', 'node');
}

/** The machine's Node 20 (a node on PATH, or /usr/local/bin, /usr/bin), else npm's node@20. */
function node20(): string {
  const candidates = [
    ...(process.env['PATH'] ?? '').split(delimiter).map((dir) => join(dir, 'node')),
    '/usr/local/bin/node',
    '/usr/bin/node',
  ];
  return candidates.find((node) => existsSync(node) && versionOf(node)?.startsWith('v20.')) ?? npmNode(20);
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** A child process with a minimal environment (PATH, HOME = the temp dir, and `env`). */
function run(command: string, args: readonly string[], env: Record<string, string> = {}, cwd = work): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env['PATH'], HOME: work, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

const stub = (binary: string) => join(root, 'bin', `${binary}.mjs`);

/** Imports the three entry points of the built library (ESM) and requires them (CommonJS); prints what happened. */
const IMPORT_ALL = `
const entries = ['index.js', 'core.js'].map((file) => '${join(root, 'dist', 'library')}/' + file).concat('${join(root, 'dist', 'plugin', 'index.js')}');
const results = [];
for (const entry of entries) {
  try {
    const module = await import(entry);
    results.push({ entry, ok: Object.keys(module).length });
  } catch (error) {
    results.push({ entry, name: error.name, code: error.code, message: error.message });
  }
}
console.log(JSON.stringify(results));
`;

describe('on Node 20', () => {
  let node: string;
  let version: string;
  beforeAll(() => {
    node = node20();
    version = versionOf(node)!.slice(1);
  }, 300_000);

  const refusal = (binary: string) =>
    `${binary}: ERR_NODE_VERSION: Node.js ${version} (${node}) is too old: clusterprofile-credentials needs Node.js ${NODE_FLOOR} or newer\n`;

  it.each(BINARIES)(
    '%s stops at once with one coded line naming both versions (exit 1, nothing on stdout)',
    async (binary) => {
      for (const args of [['--version'], ['--help'], []]) {
        const result = await run(node, [stub(binary), ...args]);
        expect(result).toMatchObject({ code: 1, stdout: '', stderr: refusal(binary) });
      }
    },
  );

  it('a plugin started by its shebang with Node 20 first on PATH is refused before its first cache miss', async () => {
    const bin = join(work, 'path-bin');
    mkdirSync(bin, { recursive: true });
    execFileSync('ln', ['-sf', node, join(bin, 'node')]);
    const execInfo = oidcExecInfo({
      issuerURL: 'https://127.0.0.1:1',
      clientID: 'x',
      audience: 'https://kubernetes.test',
    });
    const result = await run(
      stub('clusterprofile-oidc'),
      ['--client-secret-file', '/nonexistent', '--cache-dir', join(work, 'cache')],
      {
        PATH: `${bin}${delimiter}${process.env['PATH'] ?? ''}`,
        KUBERNETES_EXEC_INFO: execInfo,
      },
    );
    // `#!/usr/bin/env node` found the symlink to Node 20: the line names it as it was run.
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      new RegExp(
        `^clusterprofile-oidc: ERR_NODE_VERSION: Node.js ${version.replaceAll('.', '\\.')} \\(.+\\) is too old: clusterprofile-credentials needs Node.js ${NODE_FLOOR.replaceAll('.', '\\.')} or newer\\n$`,
      ),
    );
  });

  it('kubectl running a plugin on Node 20 shows the line once, however often it retries; the next kubectl again', async () => {
    const bin = join(work, 'kubectl-bin');
    mkdirSync(bin, { recursive: true });
    execFileSync('ln', ['-sf', node, join(bin, 'node')]);
    const kubeconfig = join(work, 'node20.kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
        users: [
          {
            name: 'u',
            user: {
              exec: {
                apiVersion: 'client.authentication.k8s.io/v1',
                command: stub('clusterprofile-token-request'),
                interactiveMode: 'Never',
              },
            },
          },
        ],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    const line = refusal('clusterprofile-token-request');
    for (let attempt = 0; attempt < 2; attempt += 1) {
      // kubectl runs the plugin once per request of its discovery and retries it: five or more runs.
      const result = await run('kubectl', ['--kubeconfig', kubeconfig, 'get', 'namespaces'], {
        PATH: `${bin}${delimiter}${process.env['PATH'] ?? ''}`,
      });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr.split('\n').filter((printed) => `${printed}\n` === line)).toHaveLength(1);
      expect(result.stderr.match(/failed with exit code 1/g)?.length ?? 0).toBeGreaterThan(1);
    }
  });

  it('importing any entry point of the library throws ERR_NODE_VERSION (ESM and require)', async () => {
    const imported = await run(node, ['--input-type=module', '-e', IMPORT_ALL]);
    expect(imported.code).toBe(0);
    const message = `Node.js ${version} (${node}) is too old: clusterprofile-credentials needs Node.js ${NODE_FLOOR} or newer`;
    for (const result of JSON.parse(imported.stdout) as Record<string, unknown>[]) {
      expect(result).toMatchObject({ name: 'CredentialsError', code: 'ERR_NODE_VERSION', message });
    }
    const required = await run(node, [
      '-e',
      `try { require('${join(root, 'dist', 'library', 'core.js')}'); } catch (error) { console.log(error.code); }`,
    ]);
    expect(required.stdout).toBe('ERR_NODE_VERSION\n');
  });
});

describe(`on the floor, Node ${NODE_FLOOR} (npm's node@${NODE_FLOOR})`, () => {
  let node: string;
  let op: TestOpenIdProvider;
  beforeAll(async () => {
    node = await ensureNpmNode(NODE_FLOOR, { log: () => undefined });
    expect(versionOf(node)).toBe(`v${NODE_FLOOR}`);
    op = await startTestOpenIdProvider();
  }, 300_000);
  afterAll(async () => {
    await op?.close();
  });

  it.each(BINARIES)('%s --version and --help work', async (binary) => {
    expect(await run(node, [stub(binary), '--version'])).toMatchObject({
      code: 0,
      stdout: `${manifest.version}\n`,
      stderr: '',
    });
    const help = await run(node, [stub(binary), '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain(binary);
  });

  it('a plugin obtains a credential on a cache miss (the path that once failed inside undici on Node 20)', async () => {
    const secret = join(work, 'basic.secret');
    writeFileSync(secret, op.clients.basic.clientSecret, { mode: 0o600 });
    const execInfo = oidcExecInfo({
      issuerURL: op.issuer,
      issuerCA: op.caBase64,
      audience: op.audience,
      clientID: op.clients.basic.clientId,
    });
    const result = await run(
      node,
      [stub('clusterprofile-oidc'), '--client-secret-file', secret, '--cache-dir', join(work, 'cache22')],
      { KUBERNETES_EXEC_INFO: execInfo },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ kind: 'ExecCredential', status: { token: expect.any(String) } });
  });

  it('the library imports (every entry point)', async () => {
    const imported = await run(node, ['--input-type=module', '-e', IMPORT_ALL]);
    for (const result of JSON.parse(imported.stdout) as Record<string, unknown>[]) {
      expect(result['ok'], JSON.stringify(result)).toBeGreaterThan(0);
    }
  });
});
