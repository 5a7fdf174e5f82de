// What real OpenID Providers do differently, with hand-made answers through issue.ts's `send` seam: client
// authentication chosen from discovery (and refused naming what the OP offers), the device request's client in the
// form body (Dex reads it only there) with one retry for an OP that binds the client to its registered method, the
// device deadline (the OP's expires_in unless --login-timeout asks for less, and the message says whose ran out),
// token-exchange settings on the wire, and errors without a description. The same against Dex itself:
// test/e2e/oidc-dex.test.ts.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { oidcFlags } from '../helpers/oidc-plugin.js';
import { isCredentialsError } from '../../src/base/errors.js';
import type { FlagValues, IssueContext } from '../../src/plugin/provider.js';
import { chooseClientAuth } from '../../src/providers/oidc/client-auth.js';
import { issueOidcToken, type OidcState } from '../../src/providers/oidc/issue.js';
import type { HttpRequest, HttpResponse, ProviderMetadata } from '../../src/providers/oidc/protocol.js';
import { parseOidcSettings, type OidcFlags } from '../../src/providers/oidc/settings.js';

const T0 = new Date('2026-01-01T12:00:00Z').getTime();
const ISSUER = 'https://op.test';
const AUD = 'https://k8s.test';

let key: CryptoKey;
let jwks: { keys: object[] };
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cpc-oidc-real-ops-'));
  writeFileSync(join(dir, 'secret'), 's3cret-value\n');
  writeFileSync(join(dir, 'subject.token'), 'subject.jwt.token\n');
  writeFileSync(
    join(dir, 'client.key'),
    generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
  );
  const pair = await generateKeyPair('ES256', { extractable: true });
  key = pair.privateKey;
  jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k', alg: 'ES256' }] };
});

const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** An OP scripted per endpoint; `clock` moves with every sleep so deadlines can run out. */
function op(o: {
  authMethods?: string[] | null;
  device?: ((req: HttpRequest) => HttpResponse)[];
  token?: ((req: HttpRequest) => Promise<HttpResponse>)[];
}) {
  const discovery: Record<string, unknown> = {
    issuer: ISSUER,
    token_endpoint: `${ISSUER}/token`,
    jwks_uri: `${ISSUER}/keys`,
    device_authorization_endpoint: `${ISSUER}/device/code`,
    ...(o.authMethods === null
      ? {}
      : { token_endpoint_auth_methods_supported: o.authMethods ?? ['client_secret_basic', 'client_secret_post'] }),
  };
  const requests: HttpRequest[] = [];
  const device = [...(o.device ?? [])];
  const token = [...(o.token ?? [])];
  return {
    requests,
    of: (path: string) => requests.filter((r) => r.url === `${ISSUER}${path}`),
    async send(req: HttpRequest): Promise<HttpResponse> {
      requests.push(req);
      if (req.url.endsWith('/.well-known/openid-configuration')) return json(200, discovery);
      if (req.url === `${ISSUER}/keys`) return json(200, jwks);
      if (req.url === `${ISSUER}/device/code`) {
        const next = device.shift();
        return next
          ? next(req)
          : json(200, {
              device_code: 'dc',
              user_code: 'ABCD-EFGH',
              verification_uri: `${ISSUER}/device`,
              expires_in: 30,
              interval: 5,
            });
      }
      const next = token.shift();
      if (!next) throw new Error(`unexpected request ${req.url}`);
      return next(req);
    },
  };
}

const jwt = (claims: JWTPayload, now = T0) =>
  new SignJWT({ iss: ISSUER, sub: 'x', iat: Math.floor(now / 1000), exp: Math.floor(now / 1000) + 600, ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'k' })
    .sign(key);

const flags = oidcFlags;

const settings = (config: Record<string, unknown>, f: Partial<FlagValues<OidcFlags>>, interactive = false) =>
  parseOidcSettings(
    {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive, cluster: { server: 's', config: { issuerURL: ISSUER, ...config } } },
    },
    flags(f),
  );

/** A context whose clock advances by what `sleep` waits. */
function context(interactive = false) {
  let now = T0;
  const stderr = new PassThrough();
  let text = '';
  stderr.on('data', (c: Buffer) => (text += c.toString()));
  const ctx = {
    now: () => new Date(now),
    interactive,
    stdin: Readable.from([]),
    stderr,
    signal: new AbortController().signal,
    env: {},
    previous: undefined,
  } as IssueContext<OidcState>;
  return { ctx, sleep: async (ms: number) => void (now += ms), stderr: () => text, clock: () => now };
}

async function failure(promise: Promise<unknown>): Promise<{
  code: string;
  message: string;
  path: string | undefined;
  hint: string | undefined;
  exitCode: number | undefined;
}> {
  try {
    await promise;
  } catch (error) {
    if (isCredentialsError(error))
      return { code: error.code, message: error.message, path: error.path, hint: error.hint, exitCode: error.exitCode };
    throw error;
  }
  throw new Error('expected a failure');
}

const form = (req: HttpRequest | undefined) => new URLSearchParams(req?.body ?? '');

describe('chooseClientAuth: the method per endpoint from discovery', () => {
  const metadata = (methods?: string[]): ProviderMetadata => ({
    issuer: ISSUER,
    token_endpoint: `${ISSUER}/token`,
    jwks_uri: `${ISSUER}/keys`,
    ...(methods === undefined ? {} : { token_endpoint_auth_methods_supported: methods }),
  });
  const choose = (
    method: 'client_secret_basic' | 'private_key_jwt' | 'client_secret_post' | 'none',
    given: boolean,
    methods?: string[],
  ) => chooseClientAuth({ method, given }, metadata(methods), `${ISSUER}/.well-known/openid-configuration`);

  it.each([
    // [method, given, token_endpoint_auth_methods_supported, chosen]
    [
      'client_secret_basic',
      false,
      ['client_secret_basic', 'client_secret_post'],
      { token: 'client_secret_basic', device: 'client_secret_post', deviceFallback: 'client_secret_basic' },
    ],
    [
      'client_secret_basic',
      false,
      ['client_secret_post'],
      { token: 'client_secret_post', device: 'client_secret_post' },
    ],
    [
      'client_secret_basic',
      false,
      ['client_secret_basic', 'private_key_jwt'],
      { token: 'client_secret_basic', device: 'client_secret_basic' },
    ],
    ['client_secret_basic', false, undefined, { token: 'client_secret_basic', device: 'client_secret_basic' }],
    [
      'client_secret_basic',
      true,
      ['client_secret_basic', 'client_secret_post'],
      { token: 'client_secret_basic', device: 'client_secret_basic' },
    ],
    ['client_secret_post', true, ['client_secret_post'], { token: 'client_secret_post', device: 'client_secret_post' }],
    ['private_key_jwt', false, ['private_key_jwt'], { token: 'private_key_jwt', device: 'private_key_jwt' }],
    ['private_key_jwt', true, undefined, { token: 'private_key_jwt', device: 'private_key_jwt' }],
    ['none', false, ['client_secret_basic'], { token: 'none', device: 'none' }],
  ] as const)('%s (given: %s) with %j', (method, given, methods, chosen) => {
    expect(choose(method, given, methods as string[] | undefined)).toEqual(chosen);
  });

  it.each([
    [
      'private_key_jwt',
      false,
      ['client_secret_basic', 'client_secret_post'],
      'it offers client_secret_basic, client_secret_post',
      '--client-secret-file instead of --private-key-file',
    ],
    [
      'private_key_jwt',
      false,
      undefined,
      'has no token_endpoint_auth_methods_supported, which means client_secret_basic only',
      '--client-auth private_key_jwt',
    ],
    [
      'client_secret_post',
      true,
      ['client_secret_basic'],
      'it offers client_secret_basic',
      'choose a method the issuer offers with --client-auth',
    ],
    [
      'client_secret_basic',
      false,
      ['private_key_jwt'],
      'it offers private_key_jwt',
      '--private-key-file instead of --client-secret-file',
    ],
  ] as const)('%s (given: %s) with %j: ERR_OIDC_CLIENT_AUTH_UNSUPPORTED', (method, given, methods, offers, hint) => {
    let caught: unknown;
    try {
      choose(method, given, methods as string[] | undefined);
    } catch (error) {
      caught = error;
    }
    expect(isCredentialsError(caught)).toBe(true);
    expect(caught).toMatchObject({
      code: 'ERR_OIDC_CLIENT_AUTH_UNSUPPORTED',
      exitCode: 1,
      path: `${ISSUER}/.well-known/openid-configuration`,
    });
    expect((caught as Error).message).toContain(offers);
    expect((caught as { hint: string }).hint).toContain(hint);
  });
});

describe('client authentication on the wire', () => {
  const cc = (f: Partial<FlagValues<OidcFlags>> = {}) =>
    settings({ clientID: 'c', audience: AUD }, { 'client-secret-file': join(dir, 'secret'), ...f });

  it('a secret without --client-auth: Basic when discovery offers it, the form body when it offers only client_secret_post', async () => {
    const basic = op({
      token: [async () => json(200, { access_token: await jwt({ aud: AUD }), token_type: 'Bearer' })],
    });
    await issueOidcToken(cc(), context().ctx, { send: basic.send });
    expect(basic.of('/token')[0]!.headers['authorization']).toMatch(/^Basic /);
    expect(form(basic.of('/token')[0]).get('client_secret')).toBeNull();

    const post = op({
      authMethods: ['client_secret_post'],
      token: [async () => json(200, { access_token: await jwt({ aud: AUD }), token_type: 'Bearer' })],
    });
    await issueOidcToken(cc(), context().ctx, { send: post.send });
    expect(post.of('/token')[0]!.headers['authorization']).toBeUndefined();
    expect(form(post.of('/token')[0]).get('client_secret')).toBe('s3cret-value');
  });

  it('a key the issuer does not take: refused after discovery, before the key file is read or anything is sent', async () => {
    const dex = op({});
    const result = await failure(
      issueOidcToken(
        settings({ clientID: 'c', audience: AUD }, { 'private-key-file': join(dir, 'missing.key') }),
        context().ctx,
        { send: dex.send },
      ),
    );
    expect(result).toMatchObject({ code: 'ERR_OIDC_CLIENT_AUTH_UNSUPPORTED', exitCode: 1 });
    expect(result.message).toContain('client_secret_basic, client_secret_post');
    expect(dex.of('/token')).toEqual([]);
  });

  it('an OP that omits token_endpoint_auth_methods_supported: a key needs --client-auth private_key_jwt, which is then used', async () => {
    const quiet = op({
      authMethods: null,
      token: [async () => json(200, { access_token: await jwt({ aud: AUD }), token_type: 'Bearer' })],
    });
    const implied = await failure(
      issueOidcToken(
        settings({ clientID: 'c', audience: AUD }, { 'private-key-file': join(dir, 'client.key') }),
        context().ctx,
        { send: quiet.send },
      ),
    );
    expect(implied).toMatchObject({
      code: 'ERR_OIDC_CLIENT_AUTH_UNSUPPORTED',
      hint: expect.stringContaining('--client-auth private_key_jwt'),
    });
    await issueOidcToken(
      settings(
        { clientID: 'c', audience: AUD },
        { 'private-key-file': join(dir, 'client.key'), 'client-auth': 'private_key_jwt' },
      ),
      context().ctx,
      { send: quiet.send },
    );
    expect(form(quiet.of('/token')[0]).get('client_assertion_type')).toBe(
      'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    );
  });
});

describe('the device flow', () => {
  const device = (config: Record<string, unknown> = {}, f: Partial<FlagValues<OidcFlags>> = {}) =>
    settings({ clientID: 'kubectl', ...config }, { grant: 'device_code', ...f }, true);
  const idToken = () => jwt({ aud: 'kubectl' });

  it('a confidential client: its secret in the device request form body (what Dex reads), Basic at the token endpoint', async () => {
    const dex = op({
      token: [async () => json(200, { access_token: 'at', token_type: 'Bearer', id_token: await idToken() })],
    });
    const { ctx, sleep } = context(true);
    await issueOidcToken(device({}, { 'client-secret-file': join(dir, 'secret') }), ctx, {
      send: dex.send,
      sleep: (ms) => sleep(ms),
    });
    const request = dex.of('/device/code')[0]!;
    expect(request.headers['authorization']).toBeUndefined();
    expect(Object.fromEntries(form(request))).toMatchObject({ client_id: 'kubectl', client_secret: 's3cret-value' });
    expect(dex.of('/token')[0]!.headers['authorization']).toMatch(/^Basic /);
  });

  it('an OP that binds the client to client_secret_basic answers invalid_client to the form body: asked once more with Basic', async () => {
    const strict = op({
      device: [
        () => json(401, { error: 'invalid_client', error_description: 'client authentication failed' }),
        (req) =>
          req.headers['authorization'] === undefined
            ? json(401, { error: 'invalid_client' })
            : json(200, {
                device_code: 'dc',
                user_code: 'ABCD-EFGH',
                verification_uri: `${ISSUER}/device`,
                expires_in: 30,
              }),
      ],
      token: [async () => json(200, { access_token: 'at', token_type: 'Bearer', id_token: await idToken() })],
    });
    const { ctx, sleep } = context(true);
    await issueOidcToken(device({}, { 'client-secret-file': join(dir, 'secret') }), ctx, {
      send: strict.send,
      sleep: (ms) => sleep(ms),
    });
    const [first, second] = strict.of('/device/code');
    expect(first!.headers['authorization']).toBeUndefined();
    expect(second!.headers['authorization']).toMatch(/^Basic /);
    expect(form(second).get('client_secret')).toBeNull();
  });

  it("--client-auth is the operator's word at the device endpoint too: no form-body secret, no second try", async () => {
    const dex = op({ device: [() => json(401, { error: 'invalid_client' })] });
    const { ctx, sleep } = context(true);
    const result = await failure(
      issueOidcToken(
        device({}, { 'client-secret-file': join(dir, 'secret'), 'client-auth': 'client_secret_basic' }),
        ctx,
        { send: dex.send, sleep: (ms) => sleep(ms) },
      ),
    );
    expect(result).toMatchObject({ code: 'ERR_OIDC_LOGIN_FAILED', hint: expect.stringContaining('--client-auth') });
    expect(dex.of('/device/code')).toHaveLength(1);
  });

  it("nobody logs in: by default the deadline is the OP's expires_in, and the message says so", async () => {
    const pending = async () => json(400, { error: 'authorization_pending' });
    const o = op({ token: Array.from({ length: 10 }, () => pending) });
    const { ctx, sleep, clock } = context(true);
    const result = await failure(issueOidcToken(device(), ctx, { send: o.send, sleep: (ms) => sleep(ms) }));
    expect(result).toMatchObject({ code: 'ERR_OIDC_LOGIN_FAILED', exitCode: 1, path: `${ISSUER}/device/code` });
    expect(result.message).toContain("the issuer's expires_in of 30 s ran out");
    expect(result.hint).toContain('within 30 s');
    expect(clock() - T0).toBeGreaterThanOrEqual(30_000);
  });

  it('--login-timeout shorter than expires_in: the message names --login-timeout; a longer one changes nothing', async () => {
    const pending = async () => json(400, { error: 'authorization_pending' });
    const short = op({ token: Array.from({ length: 10 }, () => pending) });
    const a = context(true);
    const ours = await failure(
      issueOidcToken(device({}, { 'login-timeout': '10' }), a.ctx, { send: short.send, sleep: (ms) => a.sleep(ms) }),
    );
    expect(ours).toMatchObject({ code: 'ERR_OIDC_LOGIN_FAILED', path: '--login-timeout' });
    expect(ours.message).toBe("no login within --login-timeout 10 s (the issuer's device code was valid for 30 s)");
    expect(a.clock() - T0).toBeLessThan(30_000);

    const long = op({ token: Array.from({ length: 10 }, () => pending) });
    const b = context(true);
    const theirs = await failure(
      issueOidcToken(device({}, { 'login-timeout': '600' }), b.ctx, { send: long.send, sleep: (ms) => b.sleep(ms) }),
    );
    expect(theirs.message).toContain("the issuer's expires_in of 30 s ran out");
  });

  it("the OP's own expired_token: the message says the code expired at the issuer", async () => {
    const o = op({ token: [async () => json(400, { error: 'expired_token' })] });
    const { ctx, sleep } = context(true);
    const result = await failure(issueOidcToken(device(), ctx, { send: o.send, sleep: (ms) => sleep(ms) }));
    expect(result).toMatchObject({
      code: 'ERR_OIDC_LOGIN_FAILED',
      message: expect.stringContaining('expired at the issuer (its expires_in was 30 s)'),
    });
  });
});

describe('token exchange for real OPs', () => {
  const exchange = (config: Record<string, unknown> = {}, f: Partial<FlagValues<OidcFlags>> = {}) =>
    settings(
      { clientID: 'fleet', audience: 'kubernetes', scopes: ['audience:server:client_id:kubernetes'], ...config },
      { 'subject-token-file': join(dir, 'subject.token'), ...f },
    );

  it('subjectTokenType and tokenParams from the cluster reach the token request; the flags override them', async () => {
    const o = op({
      token: [
        async () => json(200, { access_token: await jwt({ aud: ['kubernetes', 'fleet'] }), token_type: 'bearer' }),
        async () => json(200, { access_token: await jwt({ aud: 'kubernetes' }), token_type: 'bearer' }),
      ],
    });
    await issueOidcToken(
      exchange({
        subjectTokenType: 'urn:ietf:params:oauth:token-type:id_token',
        tokenParams: { connector_id: 'kubernetes' },
      }),
      context().ctx,
      { send: o.send },
    );
    expect(Object.fromEntries(form(o.of('/token')[0]))).toMatchObject({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
      connector_id: 'kubernetes',
      scope: 'audience:server:client_id:kubernetes',
      client_id: 'fleet',
    });
    await issueOidcToken(
      exchange(
        { subjectTokenType: 'urn:ietf:params:oauth:token-type:id_token', tokenParams: { connector_id: 'kubernetes' } },
        {
          'subject-token-type': 'urn:ietf:params:oauth:token-type:access_token',
          'token-param': ['connector_id=github', 'extra=1'],
        },
      ),
      context().ctx,
      { send: o.send },
    );
    expect(Object.fromEntries(form(o.of('/token')[1]))).toMatchObject({
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      connector_id: 'github',
      extra: '1',
    });
  });

  it('access_denied without a description (Dex, for a subject token its connector cannot verify): still a message and a hint', async () => {
    const o = op({ token: [async () => json(401, { error: 'access_denied' })] });
    const result = await failure(issueOidcToken(exchange(), context().ctx, { send: o.send }));
    expect(result).toMatchObject({ code: 'ERR_OIDC_GRANT', exitCode: 1, path: `${ISSUER}/token` });
    expect(result.message).toBe(
      'the issuer refused the token_exchange grant: access_denied (the issuer gave no error_description)',
    );
    expect(result.hint).toContain('connector_id');
  });

  it('every OAuth error gets a hint, an unknown one too', async () => {
    const o = op({ token: [async () => json(400, { error: 'temporarily_weird' })] });
    expect((await failure(issueOidcToken(exchange(), context().ctx, { send: o.send }))).hint).toContain('log');
  });

  it("Dex's server_error (an untrusted cross-client peer) is named, with a hint", async () => {
    const o = op({ token: [async () => json(500, { error: 'server_error' })] });
    const result = await failure(issueOidcToken(exchange(), context().ctx, { send: o.send }));
    expect(result).toMatchObject({
      code: 'ERR_OIDC_GRANT',
      message: expect.stringContaining('HTTP 500 (server_error)'),
      hint: expect.stringContaining('trustedPeers'),
    });
  });

  it('a token whose audience does not match: the message shows its aud, the hint says how Dex sets it', async () => {
    const o = op({
      token: [async () => json(200, { access_token: await jwt({ aud: 'fleet' }), token_type: 'bearer' })],
    });
    const result = await failure(issueOidcToken(exchange(), context().ctx, { send: o.send }));
    expect(result).toMatchObject({ code: 'ERR_OIDC_TOKEN_INVALID', exitCode: 1 });
    expect(result.message).toContain('wrong audience ("aud"): the token is for "fleet", not "kubernetes"');
    expect(result.hint).toContain('audience:server:client_id:<audience>');
  });
});
