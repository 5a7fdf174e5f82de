// clusterprofile-oidc, built, as a child process against a REAL OpenID Provider (oidc-provider on loopback HTTPS).
// Needs `npm run build` first.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-op.js';
import { cacheEntries, oidcExecInfo, runOidcPlugin } from '../helpers/oidc-plugin.js';

let op: TestOpenIdProvider;
let files: string;

beforeAll(async () => {
  op = await startTestOpenIdProvider({ accounts: { alice: { groups: ['fleet-admins'] } } });
  files = mkdtempSync(join(tmpdir(), 'cpc-oidc-files-'));
  writeFileSync(join(files, 'basic.secret'), `${op.clients.basic.clientSecret}\n`, { mode: 0o600 });
  writeFileSync(join(files, 'post.secret'), op.clients.post.clientSecret, { mode: 0o600 });
  writeFileSync(join(files, 'wrong.secret'), 'not-the-secret', { mode: 0o600 });
  writeFileSync(join(files, 'client.key'), op.clients.privateKeyJwt.privateKeyPem, { mode: 0o600 });
});
afterAll(async () => {
  await op?.close();
});

const cacheDir = (): string => mkdtempSync(join(tmpdir(), 'cpc-oidc-cache-'));
const config = (extra: Record<string, unknown> = {}) => ({
  issuerURL: op.issuer,
  issuerCA: op.caBase64,
  audience: op.audience,
  ...extra,
});
const credential = (stdout: string) =>
  JSON.parse(stdout) as { apiVersion: string; kind: string; status: { token: string; expirationTimestamp: string } };
const grantsOf = (type: string) => op.grants.filter((g) => g.grantType === type);

function expectFailure(run: { code: number | null; stdout: string; stderr: string }, code: string, exit = 1): void {
  expect(run.stdout).toBe('');
  expect(run.code).toBe(exit);
  expect(run.stderr).toContain(code);
  expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
}

describe('clusterprofile-oidc: controller grants', () => {
  it('client_credentials with client_secret_basic prints a validated JWT access token and serves the next run from the cache', async () => {
    const dir = cacheDir();
    const info = oidcExecInfo(config({ clientID: op.clients.basic.clientId }));
    const args = ['--client-secret-file', join(files, 'basic.secret'), '--cache-dir', dir];
    const before = grantsOf('client_credentials').length;
    const first = await runOidcPlugin(args, info);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const out = credential(first.stdout);
    expect(out).toMatchObject({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential' });
    const claims = decodeJwt(out.status.token);
    expect(claims).toMatchObject({
      iss: op.issuer,
      aud: op.audience,
      sub: op.clients.basic.clientId,
      groups: ['machines'],
    });
    // Reported expiry: before the token's exp (margin), after now.
    const expiry = Date.parse(out.status.expirationTimestamp);
    expect(expiry).toBeLessThan(claims.exp! * 1000);
    expect(expiry).toBeGreaterThan(Date.now());

    const second = await runOidcPlugin(args, info);
    expect(second.code).toBe(0);
    expect(credential(second.stdout).status.token).toBe(out.status.token);
    expect(grantsOf('client_credentials').length).toBe(before + 1);
    expect(cacheEntries(dir)).toHaveLength(1);
  });

  it('client_credentials with client_secret_post', async () => {
    const run = await runOidcPlugin(
      [
        '--client-secret-file',
        join(files, 'post.secret'),
        '--client-auth',
        'client_secret_post',
        '--cache-dir',
        cacheDir(),
      ],
      oidcExecInfo(config({ clientID: op.clients.post.clientId })),
    );
    expect(run.code).toBe(0);
    expect(decodeJwt(credential(run.stdout).status.token).sub).toBe(op.clients.post.clientId);
  });

  it('client_credentials with private_key_jwt signed by the controller key (no shared secret)', async () => {
    const run = await runOidcPlugin(
      [
        '--private-key-file',
        join(files, 'client.key'),
        '--private-key-id',
        op.clients.privateKeyJwt.kid,
        '--cache-dir',
        cacheDir(),
      ],
      oidcExecInfo(config({ clientID: op.clients.privateKeyJwt.clientId })),
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(decodeJwt(credential(run.stdout).status.token).sub).toBe(op.clients.privateKeyJwt.clientId);
  });

  it('RFC 8693 token exchange of a subject token file without any client secret', async () => {
    const subject = join(files, 'sa.token');
    writeFileSync(subject, await op.signSubjectToken({ sub: 'system:serviceaccount:fleet:manager' }), { mode: 0o600 });
    const run = await runOidcPlugin(
      ['--subject-token-file', subject, '--cache-dir', cacheDir()],
      oidcExecInfo(config({ clientID: op.clients.exchange.clientId })),
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(decodeJwt(credential(run.stdout).status.token)).toMatchObject({
      sub: 'system:serviceaccount:fleet:manager',
      aud: op.audience,
    });
  });

  it('a subject token the issuer does not trust: ERR_OIDC_GRANT, nothing printed or cached', async () => {
    const dir = cacheDir();
    const subject = join(files, 'forged.token');
    writeFileSync(subject, await op.signSubjectToken({ iss: 'https://attacker.test' }), { mode: 0o600 });
    const run = await runOidcPlugin(
      ['--subject-token-file', subject, '--cache-dir', dir],
      oidcExecInfo(config({ clientID: op.clients.exchange.clientId })),
    );
    expectFailure(run, 'ERR_OIDC_GRANT');
    expect(run.stderr).toContain('invalid_grant');
    expect(cacheEntries(dir)).toEqual([]);
  });

  it('a wrong client secret: ERR_OIDC_GRANT invalid_client with a hint', async () => {
    const dir = cacheDir();
    const run = await runOidcPlugin(
      ['--client-secret-file', join(files, 'wrong.secret'), '--cache-dir', dir],
      oidcExecInfo(config({ clientID: op.clients.basic.clientId })),
    );
    expectFailure(run, 'ERR_OIDC_GRANT');
    expect(run.stderr).toContain('invalid_client');
    expect(run.stderr).toContain('hint:');
    expect(cacheEntries(dir)).toEqual([]);
  });

  it('an audience the issuer does not serve: ERR_OIDC_GRANT invalid_target', async () => {
    const run = await runOidcPlugin(
      ['--client-secret-file', join(files, 'basic.secret'), '--cache-dir', cacheDir()],
      oidcExecInfo(config({ clientID: op.clients.basic.clientId, audience: 'https://other-cluster.test' })),
    );
    expectFailure(run, 'ERR_OIDC_GRANT');
    expect(run.stderr).toContain('invalid_target');
  });
});

describe('clusterprofile-oidc: issuer problems', () => {
  it('issuer unreachable: ERR_OIDC_ISSUER_UNREACHABLE', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const dir = cacheDir();
    const run = await runOidcPlugin(
      ['--client-secret-file', join(files, 'basic.secret'), '--cache-dir', dir],
      oidcExecInfo(config({ clientID: op.clients.basic.clientId, issuerURL: `https://127.0.0.1:${port}` })),
    );
    expectFailure(run, 'ERR_OIDC_ISSUER_UNREACHABLE');
    expect(run.stderr).toContain('ECONNREFUSED');
    expect(cacheEntries(dir)).toEqual([]);
  });

  it('an issuer certificate not signed by issuerCA: ERR_OIDC_ISSUER_UNREACHABLE with the issuerCA hint', async () => {
    const run = await runOidcPlugin(
      ['--client-secret-file', join(files, 'basic.secret'), '--cache-dir', cacheDir()],
      oidcExecInfo({ issuerURL: op.issuer, audience: op.audience, clientID: op.clients.basic.clientId }),
    );
    expectFailure(run, 'ERR_OIDC_ISSUER_UNREACHABLE');
    expect(run.stderr).toContain('issuerCA');
  });

  it('discovery issuer mismatch (a trailing slash counts): ERR_OIDC_ISSUER_MISMATCH', async () => {
    const run = await runOidcPlugin(
      ['--client-secret-file', join(files, 'basic.secret'), '--cache-dir', cacheDir()],
      oidcExecInfo(config({ clientID: op.clients.basic.clientId, issuerURL: `${op.issuer}/` })),
    );
    expectFailure(run, 'ERR_OIDC_ISSUER_MISMATCH');
  });

  it('reaches the issuer through HTTPS_PROXY (a CONNECT tunnel; TLS still checked against issuerCA), unless NO_PROXY exempts it', async () => {
    const tunnels: string[] = [];
    const proxy = createHttpServer();
    proxy.on('connect', (req, client, head) => {
      tunnels.push(req.url ?? '');
      const [host, port] = (req.url ?? '').split(':');
      const upstream = connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const args = ['--client-secret-file', join(files, 'basic.secret'), '--cache-dir', cacheDir()];
      const info = oidcExecInfo(config({ clientID: op.clients.basic.clientId }));
      const run = await runOidcPlugin(args, info, undefined, { HTTPS_PROXY: proxyUrl });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(tunnels.length).toBeGreaterThan(0);
      expect(new Set(tunnels)).toEqual(new Set([new URL(op.issuer).host]));

      tunnels.length = 0;
      const bypass = await runOidcPlugin(
        ['--client-secret-file', join(files, 'basic.secret'), '--cache-dir', cacheDir()],
        info,
        undefined,
        { HTTPS_PROXY: proxyUrl, NO_PROXY: '127.0.0.1' },
      );
      expect(bypass.code).toBe(0);
      expect(tunnels).toEqual([]);

      const bad = await runOidcPlugin(args, info, undefined, { HTTPS_PROXY: 'socks9://nowhere' });
      expectFailure(bad, 'ERR_OIDC_CONFIG', 2);
      expect(bad.stderr).toContain('HTTPS_PROXY');
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it('bad configuration is a usage error (exit 2) naming the field', async () => {
    const run = await runOidcPlugin(['--cache-dir', cacheDir()], oidcExecInfo({ issuerURL: op.issuer }));
    expectFailure(run, 'ERR_OIDC_CONFIG', 2);
    expect(run.stderr).toContain('$.spec.cluster.config.clientID');
  });
});

describe('clusterprofile-oidc: people (interactive grants)', () => {
  const cli = () => ({
    clientID: op.clients.cli.clientId,
    issuerURL: op.issuer,
    issuerCA: op.caBase64,
    scopes: ['groups'],
  });

  it('refuses to prompt when spec.interactive is false: ERR_OIDC_INTERACTIVE_REQUIRED, nothing printed or cached', async () => {
    const dir = cacheDir();
    const before = op.grants.length;
    const run = await runOidcPlugin(['--grant', 'device_code', '--cache-dir', dir], oidcExecInfo(cli(), false));
    expectFailure(run, 'ERR_OIDC_INTERACTIVE_REQUIRED');
    expect(run.stderr).not.toContain('enter the code');
    expect(cacheEntries(dir)).toEqual([]);
    expect(op.grants.length).toBe(before);
  });

  it('device authorization grant: prompt on stderr, approved in the OP pages, ID token with groups', async () => {
    const dir = cacheDir();
    let approval: Promise<void> | undefined;
    const run = await runOidcPlugin(
      ['--grant', 'device_code', '--cache-dir', dir],
      oidcExecInfo(cli(), true),
      (stderr) => {
        const code = /enter the code (\S+)/.exec(stderr)?.[1];
        if (code !== undefined && approval === undefined) approval = op.approveDeviceCode(code, { login: 'alice' });
      },
    );
    await approval;
    expect(run.code).toBe(0);
    const token = credential(run.stdout).status.token;
    expect(decodeJwt(token)).toMatchObject({
      iss: op.issuer,
      sub: 'alice',
      aud: op.clients.cli.clientId,
      groups: ['fleet-admins'],
    });
    const [entry] = cacheEntries(dir);
    expect(entry?.entry.state?.refreshToken).toBeTruthy();
  });

  it('device flow returning the JWT access token for the cluster audience (token: access_token)', async () => {
    let approval: Promise<void> | undefined;
    const run = await runOidcPlugin(
      ['--grant', 'device_code', '--cache-dir', cacheDir()],
      oidcExecInfo({ ...cli(), token: 'access_token', audience: op.audience }, true),
      (stderr) => {
        const code = /enter the code (\S+)/.exec(stderr)?.[1];
        if (code !== undefined && approval === undefined) approval = op.approveDeviceCode(code, { login: 'alice' });
      },
    );
    await approval;
    expect(run.code, run.stderr).toBe(0);
    expect(decodeJwt(credential(run.stdout).status.token)).toMatchObject({
      iss: op.issuer,
      sub: 'alice',
      aud: op.audience,
      groups: ['fleet-admins'],
    });
  });

  it('authorization code + PKCE: the login URL on stderr, followed through the interaction pages to the loopback redirect', async () => {
    const dir = cacheDir();
    let login: Promise<{ body: string }> | undefined;
    const run = await runOidcPlugin(['--cache-dir', dir], oidcExecInfo(cli(), true), (stderr) => {
      const url = /open this URL in a browser:\s+(\S+)/.exec(stderr)?.[1];
      if (url !== undefined && login === undefined) login = op.login(url, { login: 'bob' });
    });
    expect(run.code).toBe(0);
    expect((await login)?.body).toContain('You may close this window');
    const url = new URL(/open this URL in a browser:\s+(\S+)/.exec(run.stderr)![1]!);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(decodeJwt(credential(run.stdout).status.token)).toMatchObject({ sub: 'bob', groups: ['developers'] });
  });

  it('authorization code: the person aborts at the OP: ERR_OIDC_LOGIN_FAILED access_denied, nothing printed or cached', async () => {
    const dir = cacheDir();
    let login: Promise<unknown> | undefined;
    const run = await runOidcPlugin(['--cache-dir', dir], oidcExecInfo(cli(), true), (stderr) => {
      const url = /open this URL in a browser:\s+(\S+)/.exec(stderr)?.[1];
      if (url !== undefined && login === undefined) login = op.login(url, { abort: true });
    });
    await login;
    expectFailure(run, 'ERR_OIDC_LOGIN_FAILED');
    expect(run.stderr).toContain('access_denied');
    expect(cacheEntries(dir)).toEqual([]);
  });

  async function deviceLogin(dir: string, login = 'alice'): Promise<string> {
    let approval: Promise<void> | undefined;
    const run = await runOidcPlugin(
      ['--grant', 'device_code', '--cache-dir', dir],
      oidcExecInfo(cli(), true),
      (stderr) => {
        const code = /enter the code (\S+)/.exec(stderr)?.[1];
        if (code !== undefined && approval === undefined) approval = op.approveDeviceCode(code, { login });
      },
    );
    await approval;
    expect(run.code).toBe(0);
    return credential(run.stdout).status.token;
  }

  /** Time passes: the cached token is now past its reported expiry (the refresh token stays valid). */
  function expireCachedToken(dir: string): void {
    const [entry] = cacheEntries(dir);
    const document = JSON.parse(readFileSync(entry!.file, 'utf8'));
    document.status.expirationTimestamp = new Date(Date.now() - 1000).toISOString();
    writeFileSync(entry!.file, JSON.stringify(document));
  }

  it('refresh-token rotation under 4 parallel non-interactive runs: exactly one refresh, all print the same new token', async () => {
    const dir = cacheDir();
    const first = await deviceLogin(dir);
    const oldRefresh = cacheEntries(dir)[0]!.entry.state!.refreshToken!;
    // An ID token has no jti: one refreshed within the same second as the login is byte-identical to it. Let the
    // clock pass the first token's iat so that "a new token was printed" can be told apart from "the old one was".
    const issuedAt = (token: string): number =>
      JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).iat;
    while (Math.floor(Date.now() / 1000) <= issuedAt(first)) await new Promise((resolve) => setTimeout(resolve, 50));
    expireCachedToken(dir);
    const before = grantsOf('refresh_token').length;
    const runs = await Promise.all(
      [1, 2, 3, 4].map(() => runOidcPlugin(['--grant', 'device_code', '--cache-dir', dir], oidcExecInfo(cli(), false))),
    );
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const tokens = new Set(runs.map((run) => credential(run.stdout).status.token));
    expect(tokens.size).toBe(1);
    expect(tokens.has(first)).toBe(false);
    expect(issuedAt([...tokens][0]!)).toBeGreaterThan(issuedAt(first));
    expect(grantsOf('refresh_token').slice(before)).toEqual([expect.objectContaining({ outcome: 'success' })]);
    const newRefresh = cacheEntries(dir)[0]!.entry.state!.refreshToken!;
    expect(newRefresh).not.toBe(oldRefresh); // rotated and stored
  });

  it('a revoked refresh token without a terminal: ERR_OIDC_REFRESH_FAILED, nothing printed, the entry left as it was', async () => {
    const dir = cacheDir();
    await deviceLogin(dir);
    expireCachedToken(dir);
    const entryBefore = readFileSync(cacheEntries(dir)[0]!.file, 'utf8');
    await op.revokeRefreshTokens();
    const run = await runOidcPlugin(['--grant', 'device_code', '--cache-dir', dir], oidcExecInfo(cli(), false));
    expectFailure(run, 'ERR_OIDC_REFRESH_FAILED');
    expect(run.stderr).toContain('invalid_grant');
    expect(readFileSync(cacheEntries(dir)[0]!.file, 'utf8')).toBe(entryBefore);
  });

  it('a revoked refresh token with a terminal: logs in again (one prompt)', async () => {
    const dir = cacheDir();
    await deviceLogin(dir);
    expireCachedToken(dir);
    await op.revokeRefreshTokens();
    const token = await deviceLogin(dir, 'carol');
    expect(decodeJwt(token).sub).toBe('carol');
  });

  it('parallel interactive runs share one login: a single prompt, one device grant', async () => {
    const dir = cacheDir();
    let prompts = 0;
    const approvals: Promise<void>[] = [];
    const before = grantsOf('urn:ietf:params:oauth:grant-type:device_code').filter(
      (g) => g.outcome === 'success',
    ).length;
    const runs = await Promise.all(
      [1, 2, 3].map(() => {
        let seen = false;
        return runOidcPlugin(['--grant', 'device_code', '--cache-dir', dir], oidcExecInfo(cli(), true), (stderr) => {
          const code = /enter the code (\S+)/.exec(stderr)?.[1];
          if (code !== undefined && !seen) {
            seen = true;
            prompts += 1;
            approvals.push(op.approveDeviceCode(code));
          }
        });
      }),
    );
    await Promise.all(approvals);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    expect(prompts).toBe(1);
    expect(new Set(runs.map((r) => credential(r.stdout).status.token)).size).toBe(1);
    expect(grantsOf('urn:ietf:params:oauth:grant-type:device_code').filter((g) => g.outcome === 'success').length).toBe(
      before + 1,
    );
  });
});
