/**
 * oidc against Dex, the OpenID Provider Kubernetes fleets run (test/helpers/dex.ts; kube-apiserver trusts it as a
 * second jwt issuer with audience `kubernetes`, prefix `dex:`). Every grant Dex and the plugin both support, driven
 * through OUR plugin as a child process: client_credentials (basic, chosen from discovery, and post), RFC 8693 token
 * exchange as docs/guides/oidc.md's workload-identity example writes it (subjectTokenType id_token, connector_id, the
 * audience from a cross-client scope), the device flow with a confidential client (the client in the form body: Dex
 * reads it only there) and with the public client, refresh, and authorization code + PKCE through the loopback
 * redirect. Each token is then shown to the real kube-apiserver. What Dex answers where it differs from the RFCs
 * (access_denied without a description, Invalid subject_token_type, a missing connector_id, no private_key_jwt, the
 * audience only from scopes) ends in a coded error with a hint, exit 1, nothing on stdout and nothing cached.
 */
import { mkdir, mkdtemp, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeJwt } from 'jose';
import { Agent, fetch } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  applyAsAdmin,
  clusterProfileDocument,
  e2eContext,
  exec,
  kubectl,
  tempFile,
  tokenKubeconfig,
  whoami,
} from '../helpers/controlplane-e2e.js';
import {
  DEX_AUDIENCE_SCOPE,
  DEX_EXCHANGE_CONNECTOR,
  DEX_USER,
  dexApproveDeviceCodeAt,
  dexLoginAt,
  startDex,
} from '../helpers/dex.js';
import { signSubjectTokenWith } from '../helpers/oidc-op.js';
import { OIDC_BIN, runOidcPlugin, type OidcRun } from '../helpers/oidc-plugin.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const cli = path.join(repo, 'bin/clusterprofile.mjs');
const NAMESPACE = 'oidc-dex-e2e';
const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';

async function tempDir(prefix: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const parent = path.join(controlPlane.workDir, 'files');
  await mkdir(parent, { recursive: true });
  return mkdtemp(path.join(parent, prefix));
}

async function cached(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).filter((f) => String(f).endsWith('.json')).map(String);
}

/** The per-cluster config for Dex: audience `kubernetes`, which Dex puts in `aud` only for the cross-client scope. */
function dexConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const { dex } = e2eContext();
  return {
    issuerURL: dex.issuer,
    issuerCA: Buffer.from(dex.caPem).toString('base64'),
    audience: dex.audience,
    scopes: [DEX_AUDIENCE_SCOPE],
    ...extra,
  };
}

async function runPlugin(
  args: string[],
  config: Record<string, unknown>,
  o: { interactive?: boolean; cacheDir?: string; onStderr?: (stderr: string) => void } = {},
): Promise<OidcRun & { cacheDir: string }> {
  const { controlPlane } = e2eContext();
  const cacheDir = o.cacheDir ?? (await tempDir('dex-cache-'));
  const execInfo = JSON.stringify({
    kind: 'ExecCredential',
    apiVersion: 'client.authentication.k8s.io/v1',
    spec: {
      interactive: o.interactive ?? false,
      cluster: {
        server: controlPlane.server,
        'certificate-authority-data': Buffer.from(await readFile(controlPlane.caFile, 'utf8')).toString('base64'),
        config,
      },
    },
  });
  return { ...(await runOidcPlugin([...args, '--cache-dir', cacheDir], execInfo, o.onStderr)), cacheDir };
}

function tokenOf(run: OidcRun): string {
  // Nothing but the login prompt (and its indented URL lines).
  expect(run.stderr.replace(/clusterprofile-oidc: to log in[^\n]*\n( {2}[^\n]*\n)*/g, '')).toBe('');
  expect(run.code).toBe(0);
  return (JSON.parse(run.stdout) as { status: { token: string } }).status.token;
}

/** What kube-apiserver says about a token: the Dex `sub` with the `dex:` prefix, and the groups. */
async function identity(token: string): Promise<{ username: string; groups: string[] }> {
  return whoami(await tokenKubeconfig(`dex-${Math.random().toString(36).slice(2)}`, token));
}

/** Ends like every bad case must: a coded error with a hint, exit 1, empty stdout, nothing cached, no stack, no token. */
async function expectFailure(run: OidcRun & { cacheDir: string }, code: string): Promise<void> {
  expect(run.stdout).toBe('');
  expect(run.code).toBe(1);
  expect(run.stderr).toContain(code);
  expect(run.stderr).toContain('hint:');
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(run.stderr).not.toMatch(/eyJ[\w-]+\.eyJ/);
  expect(await cached(run.cacheDir)).toEqual([]);
}

/**
 * The workload's own token: what the platform hands a pod. Here a JWT the test OpenID Provider issues to one of its
 * clients; Dex's `kubernetes` connector trusts that issuer (in a cluster it would trust the service-account issuer).
 */
async function workloadToken(): Promise<string> {
  const { oidc } = e2eContext();
  const client = oidc.clients['basic']!;
  const dispatcher = new Agent({ connect: { ca: oidc.caPem } });
  try {
    const response = await fetch(`${oidc.issuer}/token`, {
      method: 'POST',
      dispatcher,
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${client['clientId']}:${client['clientSecret']}`).toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
    const body = (await response.json()) as { access_token?: string };
    if (response.status !== 200 || body.access_token === undefined)
      throw new Error(`the test OP issued no workload token: ${response.status}`);
    return body.access_token;
  } finally {
    await dispatcher.close();
  }
}

let workloadTokenFile: string;
let fleetSecretFile: string;
let deviceSecretFile: string;

beforeAll(async () => {
  const { dex } = e2eContext();
  workloadTokenFile = await tempFile('workload.token', `${await workloadToken()}\n`);
  fleetSecretFile = await tempFile('fleet-manager.secret', `${dex.clients.fleetManager.clientSecret}\n`);
  deviceSecretFile = await tempFile('kubectl-device.secret', `${dex.clients.kubectlDevice.clientSecret}\n`);
  // People of group `developers` may read configmaps in one namespace (a group claim Dex issues with the groups scope).
  await applyAsAdmin({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'team-settings', namespace: NAMESPACE },
        data: { team: 'developers' },
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'dex-configmap-reader', namespace: NAMESPACE },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'dex-configmap-reader', namespace: NAMESPACE },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'dex-configmap-reader' },
        subjects: [
          { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: `${dex.groupsPrefix}${DEX_USER.groups[0]}` },
        ],
      },
    ],
  });
});

describe('Dex: controller grants', () => {
  it('client_credentials: client_secret_basic chosen from discovery; kube-apiserver accepts the token as dex:<sub>', async () => {
    const { dex } = e2eContext();
    const token = tokenOf(
      await runPlugin(
        ['--client-secret-file', fleetSecretFile],
        dexConfig({ clientID: dex.clients.fleetManager.clientId }),
      ),
    );
    const claims = decodeJwt(token);
    expect(claims.iss).toBe(dex.issuer);
    expect(claims.aud).toEqual(expect.arrayContaining([dex.audience, dex.clients.fleetManager.clientId]));
    expect((await identity(token)).username).toBe(`${dex.usernamePrefix}${claims.sub}`);
  });

  it('client_credentials with --client-auth client_secret_post', async () => {
    const { dex } = e2eContext();
    const token = tokenOf(
      await runPlugin(
        ['--client-secret-file', fleetSecretFile, '--client-auth', 'client_secret_post'],
        dexConfig({ clientID: dex.clients.fleetManager.clientId }),
      ),
    );
    expect((await identity(token)).username).toBe(`${dex.usernamePrefix}${decodeJwt(token).sub}`);
  });

  it('a private key: Dex offers no private_key_jwt, ERR_OIDC_CLIENT_AUTH_UNSUPPORTED names what it offers', async () => {
    const { dex } = e2eContext();
    const key = await tempFile(
      'client.key',
      '-----BEGIN PRIVATE KEY-----\nnot used: refused before it is read\n-----END PRIVATE KEY-----\n',
    );
    const run = await runPlugin(
      ['--private-key-file', key],
      dexConfig({ clientID: dex.clients.fleetManager.clientId }),
    );
    await expectFailure(run, 'ERR_OIDC_CLIENT_AUTH_UNSUPPORTED');
    expect(run.stderr).toContain('client_secret_basic, client_secret_post');
    expect(run.stderr).toContain('--client-secret-file instead of --private-key-file');
  });

  it('a scope audience is what Dex puts in aud: without it the token is for the client alone, and the plugin refuses it', async () => {
    const { dex } = e2eContext();
    const run = await runPlugin(
      ['--client-secret-file', fleetSecretFile],
      dexConfig({ clientID: dex.clients.fleetManager.clientId, scopes: [] }),
    );
    await expectFailure(run, 'ERR_OIDC_TOKEN_INVALID');
    expect(run.stderr).toContain(`the token is for "${dex.clients.fleetManager.clientId}", not "${dex.audience}"`);
    expect(run.stderr).toContain('audience:server:client_id:');
  });
});

describe("Dex: docs/guides/oidc.md's workload-identity example (token exchange, no secret)", () => {
  /** The example's ClusterProfile extension for Dex, as docs/guides/oidc.md writes it (issuer and CA are this Dex's). */
  const extension = (): Record<string, unknown> => {
    const { dex } = e2eContext();
    expect([dex.clients.fleetExchange.clientId, dex.audience, DEX_EXCHANGE_CONNECTOR]).toEqual([
      'fleet-exchange',
      'kubernetes',
      'kubernetes',
    ]);
    return {
      issuerURL: dex.issuer,
      clientID: 'fleet-exchange',
      audience: 'kubernetes',
      scopes: ['audience:server:client_id:kubernetes'],
      subjectTokenType: 'urn:ietf:params:oauth:token-type:id_token',
      tokenParams: { connector_id: 'kubernetes' },
      issuerCA: Buffer.from(dex.caPem).toString('base64'),
    };
  };

  it('the plugin as a child process: the exchanged token is accepted by kube-apiserver', async () => {
    const { dex } = e2eContext();
    const token = tokenOf(await runPlugin(['--subject-token-file', workloadTokenFile], extension()));
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ iss: dex.issuer, azp: dex.clients.fleetExchange.clientId });
    expect(claims.aud).toEqual(expect.arrayContaining([dex.audience]));
    expect((await identity(token)).username).toBe(`${dex.usernamePrefix}${claims.sub}`);
  });

  it('as written: providers file + ClusterProfile, `clusterprofile kubeconfig`, kubectl execs the plugin', async () => {
    const { controlPlane, dex } = e2eContext();
    const cacheDir = await tempDir('dex-cache-');
    const profile = clusterProfileDocument({
      name: 'dex-member',
      namespace: 'fleet',
      provider: 'oidc',
      server: controlPlane.server,
      caPem: await readFile(controlPlane.caFile, 'utf8'),
      execExtension: extension(),
    });
    const providers = {
      providers: [
        {
          name: 'oidc',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [OIDC_BIN, '--subject-token-file', workloadTokenFile, '--cache-dir', cacheDir],
            provideClusterInfo: true,
          },
        },
      ],
    };
    const rendered = await exec(process.execPath, [
      cli,
      'kubeconfig',
      '--profile',
      await tempFile('dex.profile.json', JSON.stringify(profile)),
      '--clusterprofile-provider-file',
      await tempFile('dex.providers.json', JSON.stringify(providers)),
    ]);
    expect(rendered.stderr).toBe('');
    expect(rendered.code).toBe(0);
    const kubeconfig = await tempFile('dex.kubeconfig', rendered.stdout);
    const me = await whoami(kubeconfig);
    expect(me.username.startsWith(dex.usernamePrefix)).toBe(true);
    const again = await kubectl(kubeconfig, ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
    expect(again.stdout).toBe(me.username);
    expect(await cached(cacheDir)).toHaveLength(1);
  });

  it('without connector_id Dex answers invalid_request: the hint names tokenParams', async () => {
    const config = extension();
    delete config['tokenParams'];
    const run = await runPlugin(['--subject-token-file', workloadTokenFile], config);
    await expectFailure(run, 'ERR_OIDC_GRANT');
    expect(run.stderr).toContain('invalid_request: Requested connector does not exist.');
    expect(run.stderr).toContain('connector_id');
  });

  it('the default subject_token_type (…:jwt) is refused by Dex: the hint names subjectTokenType; the flag overrides the config', async () => {
    const config = extension();
    delete config['subjectTokenType'];
    const run = await runPlugin(['--subject-token-file', workloadTokenFile], config);
    await expectFailure(run, 'ERR_OIDC_GRANT');
    expect(run.stderr).toContain('request_not_supported: Invalid subject_token_type.');
    expect(run.stderr).toContain('subjectTokenType');
    // --token-param and --subject-token-type supply the same per controller.
    tokenOf(
      await runPlugin(
        [
          '--subject-token-file',
          workloadTokenFile,
          '--subject-token-type',
          ID_TOKEN_TYPE,
          '--token-param',
          `connector_id=${DEX_EXCHANGE_CONNECTOR}`,
        ],
        { ...config, tokenParams: null },
      ),
    );
  });

  it('a subject token the connector does not trust: access_denied without a description, and a hint all the same', async () => {
    const { oidc } = e2eContext();
    // Signed by a key the harness holds, for an issuer Dex's connector does not know.
    const foreign = await tempFile(
      'foreign.token',
      await signSubjectTokenWith(oidc.subjectTokenKey, { sub: 'system:serviceaccount:fleet:intruder' }),
    );
    const run = await runPlugin(['--subject-token-file', foreign], extension());
    await expectFailure(run, 'ERR_OIDC_GRANT');
    expect(run.stderr).toContain('access_denied (the issuer gave no error_description)');
    expect(run.stderr).toContain('connector_id cannot verify it');
  });
});

describe('Dex: people', () => {
  /** Plays the person: approves the device code printed on stderr, once. */
  function approveOnPrompt(password: string): { onStderr: (stderr: string) => void; done: () => Promise<void> } {
    const { dex } = e2eContext();
    let approval: Promise<void> | undefined;
    return {
      onStderr: (stderr) => {
        const url = /\(or open (\S+)\)/.exec(stderr)?.[1];
        if (url !== undefined && approval === undefined) approval = dexApproveDeviceCodeAt(dex, url, { password });
      },
      done: async () => {
        expect(approval).toBeDefined();
        await approval;
      },
    };
  }

  it("device code with a confidential client, no flags beyond the client's: it completes, kube-apiserver accepts the ID token", async () => {
    const { dex } = e2eContext();
    const person = approveOnPrompt(dex.password);
    const run = await runPlugin(
      ['--grant', 'device_code', '--client-secret-file', deviceSecretFile],
      dexConfig({ clientID: dex.clients.kubectlDevice.clientId, scopes: ['groups', DEX_AUDIENCE_SCOPE] }),
      { interactive: true, onStderr: person.onStderr },
    );
    await person.done();
    const token = tokenOf(run);
    expect(run.stderr).toContain(`${dex.issuer}/device`);
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({
      iss: dex.issuer,
      azp: dex.clients.kubectlDevice.clientId,
      groups: [...DEX_USER.groups],
    });
    const me = await identity(token);
    expect(me.username).toBe(`${dex.usernamePrefix}${claims.sub}`);
    expect(me.groups).toContain(`${dex.groupsPrefix}developers`);
  });

  it('device code with the public client, then --force-refresh without a terminal uses the refresh token', async () => {
    const { dex } = e2eContext();
    const person = approveOnPrompt(dex.password);
    const config = dexConfig({ clientID: dex.clients.kubectl.clientId, scopes: ['groups', DEX_AUDIENCE_SCOPE] });
    const first = await runPlugin(['--grant', 'device_code'], config, { interactive: true, onStderr: person.onStderr });
    await person.done();
    const login = tokenOf(first);
    const refreshed = await runPlugin(['--grant', 'device_code', '--force-refresh'], config, {
      cacheDir: first.cacheDir,
    });
    expect(refreshed.stderr).toBe('');
    const token = tokenOf(refreshed);
    expect(token).not.toBe(login);
    expect(decodeJwt(token).sub).toBe(decodeJwt(login).sub);
    const configmaps = await kubectl(await tokenKubeconfig('dex-refreshed', token), [
      'get',
      'configmaps',
      '-n',
      NAMESPACE,
      '-o',
      'name',
    ]);
    expect(configmaps.stdout.trim()).toBe('configmap/team-settings');
  });

  it('authorization code + PKCE with the public client: the login lands on the loopback listener', async () => {
    const { dex } = e2eContext();
    let login: Promise<unknown> | undefined;
    const run = await runPlugin(
      [],
      dexConfig({ clientID: dex.clients.kubectl.clientId, scopes: ['groups', DEX_AUDIENCE_SCOPE] }),
      {
        interactive: true,
        onStderr: (stderr) => {
          const url = /open this URL in a browser:\n\s+(\S+)/.exec(stderr)?.[1];
          if (url !== undefined && login === undefined) login = dexLoginAt(dex, url, { password: dex.password });
        },
      },
    );
    expect(await login).toMatchObject({
      status: 200,
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/),
    });
    expect(run.stderr).toContain('code_challenge_method=S256');
    const token = tokenOf(run);
    expect((await identity(token)).groups).toContain(`${dex.groupsPrefix}developers`);
  });

  it("nobody logs in: the message says whose deadline ran out, the issuer's expires_in or --login-timeout", async () => {
    const { binaries, oidc } = e2eContext();
    const shortLived = await startDex({
      binary: binaries.dex,
      deviceRequestsValidFor: '2s',
      upstream: { issuer: oidc.issuer, caPem: oidc.caPem },
    });
    try {
      const config = {
        issuerURL: shortLived.issuer,
        issuerCA: Buffer.from(shortLived.caPem).toString('base64'),
        clientID: shortLived.clients.kubectl.clientId,
      };
      const expired = await runPlugin(['--grant', 'device_code'], config, { interactive: true });
      await expectFailure(expired, 'ERR_OIDC_LOGIN_FAILED');
      expect(expired.stderr).toContain("the issuer's expires_in of 2 s ran out");
    } finally {
      await shortLived.close();
    }
    const { dex } = e2eContext();
    const ours = await runPlugin(
      ['--grant', 'device_code', '--login-timeout', '1'],
      dexConfig({ clientID: dex.clients.kubectl.clientId }),
      { interactive: true },
    );
    await expectFailure(ours, 'ERR_OIDC_LOGIN_FAILED');
    expect(ours.stderr).toContain("no login within --login-timeout 1 s (the issuer's device code was valid for 300 s)");
  });
});
