/**
 * `npm run playground` (scripts/playground.mjs) as a new user meets it: started on a free port, it prints commands
 * that work as printed; the README's controller and fleet examples and its kubectl section run against it as
 * written; `status()` has the keys docs/guides/fleet.md names; SIGINT stops every process it started and removes its
 * directory. Bad input (a port taken, no Go with nothing built, a broken build) is one coded line on stderr.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/controlplane.js';
import { codeBlocks, runLines, shellLines } from '../helpers/markdown-run.js';
import { ensureControlPlaneBinaries } from './controlplane/build.mjs';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const script = join(repo, 'scripts', 'playground.mjs');
const readme = readFileSync(join(repo, 'README.md'), 'utf8');
const work = mkdtempSync(join(tmpdir(), 'cpc-playground-test-'));
const dir = join(work, 'pg');
const baseEnv = { ...process.env, PATH: [dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter) };

let playground: ChildProcess;
let stdout = '';
let stderr = '';
let exited: Promise<number | null>;
/** What the playground prints for the user to paste: the indented lines after "In another shell:". */
let printed: string[] = [];

/** Runs the playground script to its end (the bad-input cases). */
function runToEnd(args: string[], env: NodeJS.ProcessEnv) {
  return spawnSync(process.execPath, [script, ...args], { env, encoding: 'utf8', timeout: 120_000 });
}

/** Processes whose command line names `path` (what the playground started keeps its files there). */
function processesUnder(path: string): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return cmdline.includes(path) ? [`${pid}: ${cmdline}`] : [];
      } catch {
        return []; // gone in between
      }
    });
}

afterAll(async () => {
  if (playground.exitCode === null) {
    playground.kill('SIGTERM');
    await exited;
  }
  rmSync(work, { recursive: true, force: true });
});

describe('npm run playground', () => {
  beforeAll(async () => {
    playground = spawn(process.execPath, [script, '--port', String(await freePort()), '--dir', dir], {
      env: baseEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    exited = new Promise((resolve) => playground.once('exit', (code) => resolve(code)));
    playground.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    await new Promise<void>((resolve, reject) => {
      playground.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (/^ready$/m.test(stdout)) resolve();
      });
      void exited.then((code) => reject(new Error(`the playground exited (${code}) before ready:\n${stderr}`)));
    });
    const after = stdout.slice(stdout.indexOf('In another shell:'));
    printed = after
      .split('\n')
      .filter((line) => line.startsWith('  '))
      .map((line) => line.trim());
  }, 300_000);

  it('reuses the build of the e2e layer', () => {
    expect(stderr).toMatch(/^playground: reusing the build: /m);
  });

  it('prints commands that work as printed: the fleet is ready and kubectl reaches member-1 as its ServiceAccount', async () => {
    expect(printed[0]).toBe(`cd ${dir}`);
    expect(printed).toHaveLength(5);
    const ran = await runLines([printed.join('\n')], work, baseEnv);
    expect(ran[0]!.code, ran[0]!.stderr).toBe(0);
    expect(ran[0]!.stdout).toMatch(/^member-1 +token-request +ready /m);
    expect(ran[0]!.stdout).toMatch(/^member-3 +token-request +ready /m);
    expect(ran[0]!.stdout).toMatch(/Username +system:serviceaccount:fleet:member-1$/m);
  });

  /** The environment the printed `export` line sets up. */
  const userEnv = (): NodeJS.ProcessEnv => ({
    ...baseEnv,
    KUBECONFIG: join(dir, 'hub.kubeconfig'),
    PATH: [join(dir, 'bin'), baseEnv.PATH].join(delimiter),
  });
  const examples = codeBlocks(readme).filter((block) => block.language === 'ts');

  it("runs the README's controller example as written: member-1's namespaces", async () => {
    writeFileSync(join(dir, 'controller.mts'), examples[0]!.body);
    const [run] = await runLines(['node controller.mts'], dir, userEnv());
    expect(run!.stderr).toBe('');
    expect(run!.stdout.trim().split(' ')).toEqual(expect.arrayContaining(['default', 'fleet', 'kube-system']));
  }, 60_000);

  it("runs the README's fleet example as written: one line per member", async () => {
    writeFileSync(join(dir, 'fleet.mts'), examples[1]!.body);
    const child = spawn('node', ['fleet.mts'], { cwd: dir, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line per member: ${output}`)), 45_000);
      child.stdout.on('data', () => {
        if (output.split('\n').filter((line) => / 0 nodes$/.test(line)).length === 3) {
          clearTimeout(timer);
          resolve();
        }
      });
    }).finally(() => child.kill());
    expect(output.split('\n').filter(Boolean).sort()).toEqual([
      'member-1: 0 nodes',
      'member-2: 0 nodes',
      'member-3: 0 nodes',
    ]);
  }, 60_000);

  it("runs the README's kubectl section as written (the hub at ~/.kube/hub)", async () => {
    const home = join(work, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    symlinkSync(join(dir, 'hub.kubeconfig'), join(home, '.kube', 'hub'));
    const section = readme.slice(
      readme.indexOf('## kubectl'),
      readme.indexOf('\n## ', readme.indexOf('## kubectl') + 1),
    );
    const lines = shellLines(codeBlocks(section)).filter((line) => !line.startsWith('#'));
    expect(lines).toHaveLength(3);
    const ran = await runLines(lines, dir, { ...userEnv(), HOME: home });
    expect(ran.map((run) => run.code)).toEqual([0, 0, 0]);
    expect(ran.slice(0, 2).map((run) => run.stderr)).toEqual(['', '']);
    // `get nodes` as member-1 (allowed: the playground's ClusterRole): the hub has none.
    expect(ran[2]!.stderr).toBe('No resources found\n');
  }, 60_000);

  it('has the status() keys docs/guides/fleet.md names', async () => {
    const probe = `import { ClusterProfileFleet, loadAccessConfig } from 'clusterprofile-credentials';
const fleet = new ClusterProfileFleet({ namespace: 'fleet', accessConfig: await loadAccessConfig('clusterprofile-provider-file.json'), clients: false });
await fleet.start();
await fleet.settled();
const status = fleet.status();
console.log(JSON.stringify({ top: Object.keys(status), member: Object.keys(status.clusters[0]), hub: Object.keys(status.hub), credentials: Object.keys(status.credentials), ready: status.counts.ready }));
await fleet.close();
`;
    writeFileSync(join(dir, 'status.mjs'), probe);
    const [run] = await runLines(['node status.mjs'], dir, userEnv());
    expect(run!.stderr).toBe('');
    const keys = JSON.parse(run!.stdout) as Record<string, string[]> & { ready: number };
    expect(keys.ready).toBe(3);
    const page = readFileSync(join(repo, 'docs', 'guides', 'fleet.md'), 'utf8');
    const table = page.slice(page.indexOf('`status()` is plain data'), page.indexOf('## Metrics and the CLI'));
    for (const key of [...keys['top']!, ...keys['member']!, ...keys['hub']!, ...keys['credentials']!]) {
      expect(table, key).toContain(`\`${key}\``);
    }
  }, 60_000);

  it('stops on SIGINT: every process it started is gone and its directory removed', async () => {
    expect(processesUnder(dir).length).toBeGreaterThanOrEqual(3); // etcd, kube-apiserver, kube-controller-manager
    playground.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(processesUnder(dir)).toEqual([]);
    expect(existsSync(dir)).toBe(false);
    expect(stderr).toMatch(/playground: stopped; removed its files\n$/);
  }, 60_000);
});

describe('npm run playground, bad input: one coded line', () => {
  let server: Server;
  afterAll(() => server?.close());

  it('a port taken', async () => {
    server = createServer();
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
    );
    const run = runToEnd(['--port', String(port), '--dir', join(work, 'taken')], baseEnv);
    expect([run.status, run.stdout]).toEqual([1, '']);
    expect(run.stderr).toBe(
      `PLAYGROUND_PORT_IN_USE: 127.0.0.1:${port} is in use (EADDRINUSE): stop what listens there, or start on another port with npm run playground -- --port N\n`,
    );
    expect(existsSync(join(work, 'taken'))).toBe(false);
  });

  it('a --dir that holds files (stopping would remove them): refused, the files untouched', () => {
    const mine = join(work, 'mine');
    mkdirSync(mine);
    writeFileSync(join(mine, 'notes.txt'), 'keep me');
    const run = runToEnd(['--dir', mine], baseEnv);
    expect([run.status, run.stdout, run.stderr]).toEqual([
      2,
      '',
      `PLAYGROUND_USAGE: --dir ${mine} is not empty: give a new or empty directory\n`,
    ]);
    expect(readFileSync(join(mine, 'notes.txt'), 'utf8')).toBe('keep me');
  });

  it('no Go on PATH and nothing built', async () => {
    const cache = mkdtempSync(join(work, 'empty-cache-'));
    const run = runToEnd(['--port', String(await freePort())], {
      ...baseEnv,
      CPC_CACHE_DIR: cache,
      PATH: dirname(process.execPath),
    });
    expect([run.status, run.stdout]).toEqual([1, '']);
    expect(run.stderr).toMatch(
      /^PLAYGROUND_NO_GO: Go >= \d+\.\d+ is required .* `go` was not found on PATH\. Install it from https:\/\/go\.dev\/dl\/\.\n$/,
    );
  });

  it('a broken build in the cache', async () => {
    // The same targets the warm cache holds, stamped as built, but whose binaries do not run.
    const built = await ensureControlPlaneBinaries({ only: ['etcd', 'kubernetes'], log: () => {} });
    const cache = mkdtempSync(join(work, 'broken-cache-'));
    for (const target of ['etcd', 'kubernetes']) {
      const from = built.targets[target]!.dir;
      const to = join(cache, 'controlplane', basename(from));
      mkdirSync(to, { recursive: true });
      writeFileSync(join(to, 'stamp.json'), readFileSync(join(from, 'stamp.json')));
      for (const binary of readdirSync(from).filter((file) => file !== 'stamp.json')) {
        writeFileSync(join(to, binary), 'not a program', { mode: 0o755 });
      }
    }
    const run = runToEnd(['--port', String(await freePort())], { ...baseEnv, CPC_CACHE_DIR: cache });
    expect([run.status, run.stdout]).toEqual([1, '']);
    const etcdDir = join(cache, 'controlplane', basename(built.targets['etcd']!.dir));
    expect(run.stderr).toMatch(
      new RegExp(
        `^PLAYGROUND_BUILD_BROKEN: the cached etcd \\(${join(etcdDir, 'etcd')}\\) does not run \\([^)]+\\): remove ${etcdDir} and start again to rebuild it\\n$`,
      ),
    );
  });
});
