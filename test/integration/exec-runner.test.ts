import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatError } from '../../src/base/errors.js';
import { ExecAuthenticator } from '../../src/exec/authenticator.js';
import { runExecPlugin } from '../../src/exec/runner.js';
import { EXEC_DEPTH_ENV } from '../../src/exec/request.js';
import type { ExecCluster, ExecConfig } from '../../src/resolve/types.js';
import { certFingerprint, createTestCa, type KeyPairPem } from '../helpers/tls.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const PLUGIN = fileURLToPath(new URL('../fixtures/plugins/plugin.mjs', import.meta.url));
const V1 = 'client.authentication.k8s.io/v1' as const;
const cluster: ExecCluster = {
  server: 'https://127.0.0.1:6443',
  'certificate-authority-data': Buffer.from('-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n').toString(
    'base64',
  ),
  'tls-server-name': 'kube.internal',
  config: { clusterName: 'spoke-1' },
};
const plugin = (...args: string[]): ExecConfig => ({ apiVersion: V1, command: PLUGIN, args, interactiveMode: 'Never' });

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string; hint?: string }> {
  try {
    await promise;
  } catch (e) {
    return e as { code: string; message: string };
  }
  throw new Error('expected a rejection');
}

/** Running (a zombie nobody reaped yet counts as dead: in a container PID 1 may never reap orphans). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

describe('runExecPlugin: real plugin processes', () => {
  let dir: string;
  let pair: KeyPairPem;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cpc-exec-'));
    const ca = await createTestCa();
    pair = await ca.issueClientCert('plugin-user');
    writeFileSync(join(dir, '1.crt'), pair.cert);
    writeFileSync(join(dir, '1.key'), pair.key);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('passes KUBERNETES_EXEC_INFO (with spec.cluster when provideClusterInfo) and the merged env', async () => {
    const exec: ExecConfig = {
      ...plugin('echo-info'),
      provideClusterInfo: true,
      env: [
        { name: 'FROM_EXEC', value: 'e' },
        { name: 'SHARED', value: 'exec-wins' },
      ],
    };
    const credential = await runExecPlugin(exec, cluster, {
      env: {
        ...process.env,
        SHARED: 'parent',
        FROM_PARENT: 'p',
        ECHO_VARS: `FROM_EXEC,SHARED,FROM_PARENT,${EXEC_DEPTH_ENV}`,
      },
    });
    const seen = JSON.parse(Buffer.from(credential.token!, 'base64').toString('utf8'));
    expect(seen.info).toEqual({ kind: 'ExecCredential', apiVersion: V1, spec: { interactive: false, cluster } });
    expect(seen.env).toEqual({ FROM_EXEC: 'e', SHARED: 'exec-wins', FROM_PARENT: 'p', [EXEC_DEPTH_ENV]: '1' });
    expect(seen.stdinIsTTY).toBe(false);
  });

  it('without provideClusterInfo the plugin sees no cluster', async () => {
    const credential = await runExecPlugin(plugin('echo-info'), cluster, { env: process.env });
    expect(JSON.parse(Buffer.from(credential.token!, 'base64').toString()).info.spec).toEqual({ interactive: false });
  });

  it('reads YAML output and certificate/key pairs', async () => {
    expect((await runExecPlugin(plugin('yaml'), cluster)).token).toBe('yaml-token-1');
    const cert = await runExecPlugin(plugin('cert', '--certs', dir), cluster);
    expect(cert.certificateFingerprint).toBe(certFingerprint(pair.cert));
  });

  it.each([
    ['garbage', 'ERR_EXEC_OUTPUT_INVALID', /^decoding stdout: /],
    [
      'wrong-api',
      'ERR_EXEC_API_VERSION_MISMATCH',
      /^exec plugin is configured to use API version client\.authentication\.k8s\.io\/v1, plugin returned version client\.authentication\.k8s\.io\/v1alpha1$/,
    ],
    ['no-status', 'ERR_EXEC_OUTPUT_INVALID', /^exec plugin didn't return a status field$/],
    ['empty-status', 'ERR_EXEC_OUTPUT_INVALID', /^exec plugin didn't return a token or cert\/key pair$/],
    ['only-cert', 'ERR_EXEC_OUTPUT_INVALID', /^exec plugin returned only certificate or key, not both$/],
    ['bad-pem', 'ERR_EXEC_OUTPUT_INVALID', /^failed parsing client key\/certificate: /],
  ])('plugin mode %s → %s with client-go’s text', async (mode, code, message) => {
    const e = await failure(runExecPlugin(plugin(mode, '--certs', dir), cluster));
    expect(e.code).toBe(code);
    expect(e.message).toMatch(message);
  });

  it('a non-zero exit carries the exit code and the plugin’s stderr', async () => {
    const e = await failure(runExecPlugin(plugin('exit3'), cluster));
    expect(e.code).toBe('ERR_EXEC_FAILED');
    expect(e.message).toBe(
      `exec: executable ${PLUGIN} failed with exit code 3\nplugin stderr:\nboom: no credentials for you`,
    );
  });

  it('a missing command says so and shows the installHint', async () => {
    const e = await failure(
      runExecPlugin(
        { ...plugin(), command: '/nonexistent/kubectl-login', installHint: 'install it with: brew install kubelogin' },
        cluster,
      ),
    );
    expect(e.code).toBe('ERR_EXEC_NOT_FOUND');
    expect(e.message).toBe(
      'exec: executable /nonexistent/kubectl-login not found\n\ninstall it with: brew install kubelogin',
    );
    const bare = await failure(runExecPlugin({ ...plugin(), command: 'cpc-no-such-plugin-xyz' }, cluster));
    expect(bare.message).toBe('exec: executable cpc-no-such-plugin-xyz not found');
  });

  it('one of our own plugins missing from PATH: the hint says where the package has it and the two fixes', async () => {
    const missing = await failure(
      runExecPlugin({ ...plugin(), command: 'clusterprofile-token-request' }, cluster, { env: { PATH: dir } }),
    );
    expect(missing.code).toBe('ERR_EXEC_NOT_FOUND');
    expect(missing.message).toBe('exec: executable clusterprofile-token-request not found');
    // This checkout is not under node_modules: the script itself is the absolute command to give.
    const script = join(REPO, 'bin', 'clusterprofile-token-request.mjs');
    expect(missing.hint).toContain(`(${script})`);
    expect(missing.hint).toContain('set "command" in the providers file to that absolute path');
    expect(formatError(missing)).not.toContain('undefined');
    // The fix the hint gives works: the same exec with that command runs the plugin.
    const fixed = await failure(
      runExecPlugin({ ...plugin(), command: script, args: ['--definitely-not-a-flag'] }, cluster, {
        env: { PATH: [dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter) },
      }),
    );
    expect(fixed.code).toBe('ERR_EXEC_FAILED');
    expect(fixed.message).toContain('--definitely-not-a-flag');
  });

  it('a plugin hanging past the timeout is killed with everything it started; the host goes on', async () => {
    const pidsFile = join(dir, 'pids');
    const started = Date.now();
    // 3 s: enough for a node process to start on a loaded 2-core machine and write its pids.
    const e = await failure(
      runExecPlugin(plugin('hang'), cluster, { timeoutMs: 3000, env: { ...process.env, PIDS_FILE: pidsFile } }),
    );
    expect(e.code).toBe('ERR_EXEC_TIMEOUT');
    expect(e.message).toMatch(/did not finish within 3000 ms; it was killed\nplugin stderr:\nwaiting forever/);
    expect(Date.now() - started).toBeLessThan(8000);
    const pids = readFileSync(pidsFile, 'utf8').trim().split('\n').map(Number);
    expect(pids).toHaveLength(2);
    await new Promise((r) => setTimeout(r, 200));
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });

  it('stdout is bounded', async () => {
    const e = await failure(runExecPlugin(plugin('token'), cluster, { maxStdoutBytes: 16 }));
    expect([e.code, e.message]).toEqual(['ERR_EXEC_OUTPUT_INVALID', 'decoding stdout: output exceeds 16 bytes']);
  });

  it('stderr goes to onStderr as it arrives', async () => {
    let seen = '';
    await failure(runExecPlugin(plugin('exit3'), cluster, { onStderr: (t) => (seen += t) }));
    expect(seen).toBe('boom: no credentials for you\n');
  });

  it('refuses to run when already nested at the limit, without starting the plugin', async () => {
    const count = join(dir, 'recursion-count');
    const e = await failure(
      runExecPlugin(plugin('token', '--count-file', count), cluster, {
        env: { ...process.env, [EXEC_DEPTH_ENV]: '3' },
      }),
    );
    expect(e.code).toBe('ERR_EXEC_RECURSION');
    expect(existsSync(count)).toBe(false);
  });

  it('a recursive plugin chain stops at the limit with a clear error', async () => {
    // Each level runs the plugin with the environment the previous plugin saw, as a plugin that runs a client that
    // execs the plugin again would: the marker grows and the chain stops at the limit instead of fork-storming.
    const depths: string[] = [];
    let env: NodeJS.ProcessEnv = { ...process.env, ECHO_VARS: EXEC_DEPTH_ENV };
    for (let i = 0; i < 5; i++) {
      try {
        const c = await runExecPlugin(plugin('echo-info'), cluster, { env });
        const depth = JSON.parse(Buffer.from(c.token!, 'base64').toString()).env[EXEC_DEPTH_ENV] as string;
        depths.push(depth);
        env = { ...env, [EXEC_DEPTH_ENV]: depth };
      } catch (e) {
        depths.push((e as { code: string }).code);
        break;
      }
    }
    expect(depths).toEqual(['1', '2', '3', 'ERR_EXEC_RECURSION']);
  });
});

describe('ExecAuthenticator with real plugins', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cpc-auth-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const runs = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0);

  it('1000 concurrent getCredential → exactly 1 plugin run', async () => {
    const count = join(dir, 'single-flight');
    const auth = new ExecAuthenticator(plugin('token', '--count-file', count, '--sleep', '100'), cluster);
    const all = await Promise.all(Array.from({ length: 1000 }, () => auth.getCredential()));
    expect(runs(count)).toBe(1);
    expect(new Set(all.map((c) => c.token))).toEqual(new Set(['token-1']));
  });

  it('a bad credential is never cached: each call runs the plugin again', async () => {
    const count = join(dir, 'bad');
    const auth = new ExecAuthenticator(plugin('garbage', '--count-file', count), cluster);
    await failure(auth.getCredential());
    await failure(auth.getCredential());
    expect(runs(count)).toBe(2);
    expect(auth.peek()).toBeUndefined();
  });
});
