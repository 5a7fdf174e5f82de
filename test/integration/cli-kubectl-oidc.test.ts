/**
 * A person's path: `clusterprofile kubeconfig --interactive-mode IfAvailable` renders a kubeconfig whose user runs
 * clusterprofile-oidc with the device-code grant; the real kubectl, in a real terminal (`script` gives it a pty),
 * runs the plugin, which prints the device code on the terminal; the test plays the person at the test OpenID
 * Provider's pages; kubectl then reaches a local API server with the ID token. The same kubeconfig rendered with the
 * default (the providers file says nothing: Never) cannot log in. Needs `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runBin } from '../helpers/library-cli.js';
import { startTestOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-op.js';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.js';

const OIDC_BIN = fileURLToPath(new URL('../../bin/clusterprofile-oidc.mjs', import.meta.url));
const NAMESPACE = { kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'default' } };

let dir: string;
let op: TestOpenIdProvider;
let ca: TestCa;
let member: TestHttpsServer;
const seenSubjects: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-kubectl-oidc-'));
  op = await startTestOpenIdProvider({ accounts: { alice: { groups: ['fleet-admins'] } } });
  ca = await createTestCa();
  // The member's API server: accepts an ID token of the OP for the CLI client (what structured authentication checks).
  member = await startHttpsServer({
    ca,
    handler(request, _req, res) {
      res.setHeader('content-type', 'application/json');
      let claims: { iss?: string; aud?: unknown; sub?: string } = {};
      try {
        claims = decodeJwt(request.bearer ?? '');
      } catch {
        claims = {};
      }
      if (claims.iss !== op.issuer || claims.aud !== op.clients.cli.clientId || claims.sub === undefined) {
        res.writeHead(401);
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Failure',
            message: 'Unauthorized',
            reason: 'Unauthorized',
            code: 401,
          }),
        );
        return;
      }
      seenSubjects.push(claims.sub);
      res.writeHead(200);
      res.end(JSON.stringify(NAMESPACE));
    },
  });
  const providers = {
    providers: [
      {
        name: 'oidc',
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: [OIDC_BIN, '--grant', 'device_code', '--cache-dir', join(dir, 'cache')],
          provideClusterInfo: true,
        },
      },
    ],
  };
  await writeFile(join(dir, 'providers.json'), JSON.stringify(providers));
  const profile = {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name: 'member-1', namespace: 'fleet' },
    spec: { displayName: 'member-1', clusterManager: { name: 'test' } },
    status: {
      accessProviders: [
        {
          name: 'oidc',
          cluster: {
            server: member.url,
            'certificate-authority-data': ca.certBase64,
            extensions: [
              {
                name: 'client.authentication.k8s.io/exec',
                extension: { issuerURL: op.issuer, issuerCA: op.caBase64, clientID: op.clients.cli.clientId },
              },
            ],
          },
        },
      ],
    },
  };
  await writeFile(join(dir, 'member-1.json'), JSON.stringify(profile));
}, 60_000);

afterAll(async () => {
  await member?.close();
  await op?.close();
  await rm(dir, { recursive: true, force: true });
});

async function renderKubeconfig(file: string, extra: string[]): Promise<Record<string, any>> {
  const result = await runBin(
    ['kubeconfig', '--profile', 'member-1.json', '--clusterprofile-provider-file', 'providers.json', ...extra],
    { cwd: dir },
  );
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  await writeFile(join(dir, file), result.stdout, { mode: 0o600 });
  return parse(result.stdout);
}

/**
 * kubectl in a pseudo-terminal (`script`): what it writes to the terminal, and its exit code. `onScreen` sees the
 * screen so far each time more arrives.
 */
function kubectlInTerminal(
  kubeconfig: string,
  onScreen: (screen: string) => void,
): Promise<{ code: number | null; screen: string }> {
  const command = `kubectl --kubeconfig ${join(dir, kubeconfig)} get --raw /api/v1/namespaces/default`;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qefc', command, '/dev/null'], {
      env: { PATH: process.env['PATH'], HOME: dir, TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    const more = (chunk: string) => {
      screen += chunk;
      onScreen(screen);
    };
    child.stdout.setEncoding('utf8').on('data', more);
    child.stderr.setEncoding('utf8').on('data', more);
    const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}

describe('kubectl with a kubeconfig for a person (oidc device code)', () => {
  it('the default follows the providers file, which says nothing: Never, and kubectl cannot log in from a terminal', async () => {
    const doc = await renderKubeconfig('never.kubeconfig', []);
    expect(doc['users'][0].user.exec.interactiveMode).toBe('Never');
    const run = await kubectlInTerminal('never.kubeconfig', () => {});
    expect(run.code).not.toBe(0);
    expect(run.screen).toContain('ERR_OIDC_INTERACTIVE_REQUIRED');
    expect(run.screen).not.toContain('enter the code');
  });

  it('--interactive-mode IfAvailable: kubectl shows the device code in the terminal, the person approves, the call succeeds', async () => {
    const doc = await renderKubeconfig('person.kubeconfig', ['--interactive-mode', 'IfAvailable']);
    expect(doc['users'][0].user.exec.interactiveMode).toBe('IfAvailable');
    let approval: Promise<void> | undefined;
    const run = await kubectlInTerminal('person.kubeconfig', (screen) => {
      const code = /enter the code (\S+)/.exec(screen)?.[1];
      if (code !== undefined && approval === undefined) approval = op.approveDeviceCode(code, { login: 'alice' });
    });
    await approval;
    expect(approval, run.screen).toBeDefined();
    expect(run.code, run.screen).toBe(0);
    expect(run.screen).toContain('"name":"default"');
    expect(seenSubjects).toContain('alice');

    // The next call is served from the plugin's cache: no prompt, the same person.
    const again = await kubectlInTerminal('person.kubeconfig', () => {});
    expect(again.code, again.screen).toBe(0);
    expect(again.screen).not.toContain('enter the code');
  });

  it('a providers file that asks for a mode gets it by default; the flag wins', async () => {
    const providers = JSON.parse(
      JSON.stringify({
        providers: [
          {
            name: 'oidc',
            execConfig: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: 'clusterprofile-oidc',
              interactiveMode: 'Always',
            },
          },
        ],
      }),
    );
    await writeFile(join(dir, 'always.json'), JSON.stringify(providers));
    const fromFile = await runBin(
      ['kubeconfig', '--profile', 'member-1.json', '--clusterprofile-provider-file', 'always.json'],
      { cwd: dir },
    );
    expect(parse(fromFile.stdout).users[0].user.exec.interactiveMode).toBe('Always');
    const flag = await runBin(
      [
        'kubeconfig',
        '--profile',
        'member-1.json',
        '--clusterprofile-provider-file',
        'always.json',
        '--interactive-mode',
        'Never',
      ],
      { cwd: dir },
    );
    expect(parse(flag.stdout).users[0].user.exec.interactiveMode).toBe('Never');
    const bad = await runBin(['kubeconfig', '--profile', 'member-1.json', '--interactive-mode', 'Sometimes'], {
      cwd: dir,
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^ERR_USAGE: unknown value "Sometimes" of --interactive-mode \(one of IfAvailable, Always, Never\)\n/,
    );
  });
});
