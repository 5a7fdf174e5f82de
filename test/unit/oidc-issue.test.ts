// The grant orchestration (issue.ts) with hand-made HTTP responses through its `send` seam and a frozen clock:
// what happens when an issuer misbehaves in ways a real, correct OP never does.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { oidcFlags } from '../helpers/oidc-plugin.js';
import { isCredentialsError } from '../../src/base/errors.js';
import type { IssueContext } from '../../src/plugin/provider.js';
import { issueOidcToken, type OidcState } from '../../src/providers/oidc/issue.js';
import type { HttpRequest, HttpResponse } from '../../src/providers/oidc/protocol.js';
import { parseOidcSettings } from '../../src/providers/oidc/settings.js';

const NOW = new Date('2026-01-01T12:00:00Z');
const nowS = Math.floor(NOW.getTime() / 1000);
const ISSUER = 'https://op.test';
const AUD = 'https://k8s.test';

let key: CryptoKey;
let jwks: { keys: object[] };
let subjectTokenFile: string;
beforeAll(async () => {
  subjectTokenFile = join(mkdtempSync(join(tmpdir(), 'cpc-oidc-unit-')), 'sa.token');
  writeFileSync(subjectTokenFile, 'subject.jwt.token\n');
  const pair = await generateKeyPair('ES256', { extractable: true });
  key = pair.privateKey;
  jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k', alg: 'ES256' }] };
});

const jwt = (claims: JWTPayload) =>
  new SignJWT({ iss: ISSUER, sub: 'x', iat: nowS, exp: nowS + 600, ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'k' })
    .sign(key);
const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const discovery = {
  issuer: ISSUER,
  token_endpoint: `${ISSUER}/token`,
  jwks_uri: `${ISSUER}/jwks`,
  device_authorization_endpoint: `${ISSUER}/device`,
  authorization_endpoint: `${ISSUER}/auth`,
};

/** An issuer scripted per request: discovery and JWKS are standard; `token` answers each token request in turn. */
function issuer(token: ((req: HttpRequest) => Promise<HttpResponse>)[]) {
  const requests: HttpRequest[] = [];
  return {
    requests,
    async send(req: HttpRequest): Promise<HttpResponse> {
      requests.push(req);
      if (req.url.endsWith('/.well-known/openid-configuration')) return json(200, discovery);
      if (req.url === discovery.jwks_uri) return json(200, jwks);
      if (req.url === discovery.device_authorization_endpoint) {
        return json(200, {
          device_code: 'dc',
          user_code: 'WXYZ-1234',
          verification_uri: `${ISSUER}/device`,
          expires_in: 600,
          interval: 2,
        });
      }
      const next = token.shift();
      if (!next) throw new Error(`unexpected request ${req.url}`);
      return next(req);
    },
  };
}

const flags = oidcFlags;

function context(
  o: { interactive?: boolean; previous?: OidcState } = {},
): IssueContext<OidcState> & { stderrText(): string } {
  const stderr = new PassThrough();
  let text = '';
  stderr.on('data', (c: Buffer) => (text += c.toString()));
  return {
    now: () => NOW,
    interactive: o.interactive ?? false,
    stdin: Readable.from([]),
    stderr,
    signal: new AbortController().signal,
    env: {},
    previous:
      o.previous === undefined
        ? undefined
        : {
            status: { token: 'old', expirationTimestamp: NOW.toISOString() },
            issuedAt: NOW.toISOString(),
            state: o.previous,
          },
    stderrText: () => text,
  } as IssueContext<OidcState> & { stderrText(): string };
}

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (isCredentialsError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected a failure');
}

describe('issueOidcToken', () => {
  const exchange = (interactive = false) =>
    parseOidcSettings(
      {
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        spec: { interactive, cluster: { server: 's', config: { issuerURL: ISSUER, clientID: 'c', audience: AUD } } },
      },
      flags({ 'subject-token-file': subjectTokenFile }),
    );

  it('returns the validated access token with an expiry before exp', async () => {
    const op = issuer([async () => json(200, { access_token: await jwt({ aud: AUD }), token_type: 'Bearer' })]);
    const issued = await issueOidcToken(exchange(), context(), { send: op.send });
    expect(issued.status.expirationTimestamp).toBe(new Date((nowS + 600 - 60) * 1000).toISOString());
    const body = new URLSearchParams(op.requests.find((r) => r.url === discovery.token_endpoint)!.body);
    expect(body.get('subject_token')).toBe('subject.jwt.token');
    expect(body.get('grant_type')).toBe('urn:ietf:params:oauth:grant-type:token-exchange');
    expect(body.get('resource')).toBe(AUD);
  });

  it('refuses an access token for another audience from the issuer itself: ERR_OIDC_TOKEN_INVALID', async () => {
    const op = issuer([
      async () => json(200, { access_token: await jwt({ aud: 'https://other.test' }), token_type: 'Bearer' }),
    ]);
    expect(await failure(issueOidcToken(exchange(), context(), { send: op.send }))).toMatchObject({
      code: 'ERR_OIDC_TOKEN_INVALID',
      message: expect.stringContaining('audience'),
    });
  });

  it('refuses an opaque (non-JWT) access token: the API server could not check it either', async () => {
    const op = issuer([async () => json(200, { access_token: 'opaque-123', token_type: 'Bearer' })]);
    expect((await failure(issueOidcToken(exchange(), context(), { send: op.send }))).code).toBe(
      'ERR_OIDC_TOKEN_INVALID',
    );
  });

  const people = (interactive: boolean) =>
    parseOidcSettings(
      {
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        spec: { interactive, cluster: { server: 's', config: { issuerURL: ISSUER, clientID: 'cli' } } },
      },
      flags({ grant: 'device_code' }),
    );

  it('device flow: prompt on stderr, waits through authorization_pending and slow_down (interval +5 s)', async () => {
    const idToken = await jwt({ aud: 'cli', sub: 'alice' });
    const op = issuer([
      async () => json(400, { error: 'authorization_pending' }),
      async () => json(400, { error: 'slow_down' }),
      async () => json(200, { access_token: 'at', token_type: 'Bearer', id_token: idToken, refresh_token: 'rt1' }),
    ]);
    const ctx = context({ interactive: true });
    const sleeps: number[] = [];
    const issued = await issueOidcToken(people(true), ctx, {
      send: op.send,
      sleep: async (ms) => void sleeps.push(ms),
    });
    expect(ctx.stderrText()).toContain(`open ${ISSUER}/device and enter the code WXYZ-1234`);
    expect(sleeps).toEqual([2000, 2000, 7000]);
    expect(issued).toMatchObject({ status: { token: idToken }, state: { refreshToken: 'rt1' } });
  });

  it('device flow: access_denied ends the login with ERR_OIDC_LOGIN_FAILED', async () => {
    const op = issuer([async () => json(400, { error: 'access_denied' })]);
    expect(
      (
        await failure(
          issueOidcToken(people(true), context({ interactive: true }), { send: op.send, sleep: async () => {} }),
        )
      ).code,
    ).toBe('ERR_OIDC_LOGIN_FAILED');
  });

  it('refresh: uses the cached refresh token once and keeps it when the issuer does not rotate', async () => {
    const idToken = await jwt({ aud: 'cli' });
    const op = issuer([async () => json(200, { access_token: 'at', token_type: 'Bearer', id_token: idToken })]);
    const issued = await issueOidcToken(people(false), context({ previous: { refreshToken: 'rt0' } }), {
      send: op.send,
    });
    expect(issued.state).toEqual({ refreshToken: 'rt0', subject: 'x' });
    const refreshes = op.requests.filter((r) => r.url === discovery.token_endpoint);
    expect(refreshes).toHaveLength(1);
    expect(new URLSearchParams(refreshes[0]!.body).get('refresh_token')).toBe('rt0');
  });

  it('refresh: a token for another subject than the login is refused (OpenID Connect Core 12.2)', async () => {
    const op = issuer([
      async () =>
        json(200, { access_token: 'at', token_type: 'Bearer', id_token: await jwt({ aud: 'cli', sub: 'mallory' }) }),
    ]);
    const result = await failure(
      issueOidcToken(people(false), context({ previous: { refreshToken: 'rt0', subject: 'alice' } }), {
        send: op.send,
      }),
    );
    expect(result).toMatchObject({ code: 'ERR_OIDC_REFRESH_FAILED', message: expect.stringContaining('mallory') });
  });

  it('an interactive grant without a terminal or refresh token fails before any request', async () => {
    const op = issuer([]);
    expect((await failure(issueOidcToken(people(false), context(), { send: op.send }))).code).toBe(
      'ERR_OIDC_INTERACTIVE_REQUIRED',
    );
    expect(op.requests).toEqual([]);
  });

  it('refresh refused without a terminal: ERR_OIDC_REFRESH_FAILED and no prompt', async () => {
    const op = issuer([
      async () => json(400, { error: 'invalid_grant', error_description: 'grant request is invalid' }),
    ]);
    const ctx = context({ previous: { refreshToken: 'rt0' } });
    expect(await failure(issueOidcToken(people(false), ctx, { send: op.send }))).toMatchObject({
      code: 'ERR_OIDC_REFRESH_FAILED',
      message: expect.stringContaining('invalid_grant'),
    });
    expect(ctx.stderrText()).not.toContain('enter the code');
  });

  it('a refreshed ID token that fails validation is not returned', async () => {
    const op = issuer([
      async () =>
        json(200, { access_token: 'at', token_type: 'Bearer', id_token: await jwt({ aud: 'cli', exp: nowS - 100 }) }),
    ]);
    expect(
      (await failure(issueOidcToken(people(false), context({ previous: { refreshToken: 'rt0' } }), { send: op.send })))
        .code,
    ).toBe('ERR_OIDC_REFRESH_FAILED');
  });
});
