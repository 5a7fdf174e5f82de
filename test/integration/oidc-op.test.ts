// The test OpenID Provider itself (test/helpers/oidc-op.ts): the other OIDC tests and the end-to-end suite rely on
// each capability below, so each is exercised here with plain HTTP, independent of our plugin.
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, decodeJwt, importPKCS8, jwtVerify, SignJWT } from 'jose';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  approveDeviceCodeAt,
  startTestOpenIdProvider,
  TOKEN_EXCHANGE_GRANT,
  type TestOpenIdProvider,
} from '../helpers/oidc-op.js';

let op: TestOpenIdProvider;
beforeAll(async () => {
  op = await startTestOpenIdProvider();
});
afterAll(async () => {
  await op?.close();
});

async function token(form: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(`${op.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
    dispatcher: op.dispatcher,
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

async function verify(jwt: string) {
  const res = await fetch(`${op.issuer}/jwks`, { dispatcher: op.dispatcher });
  const { keys } = (await res.json()) as { keys: object[] };
  return jwtVerify(jwt, createLocalJWKSet({ keys: keys as never }), { issuer: op.issuer });
}

describe('test OpenID Provider', () => {
  it('serves discovery over HTTPS trusted by caPem with the issuer it reports', async () => {
    const res = await fetch(`${op.issuer}/.well-known/openid-configuration`, { dispatcher: op.dispatcher });
    const doc = (await res.json()) as Record<string, unknown>;
    expect(doc.issuer).toBe(op.issuer);
    expect(doc.grant_types_supported).toEqual(expect.arrayContaining(['client_credentials', TOKEN_EXCHANGE_GRANT]));
    expect(doc.code_challenge_methods_supported).toEqual(['S256']);
  });

  it('issues JWT access tokens with aud and groups for client_credentials (basic, post, private_key_jwt)', async () => {
    const basic = await token(
      { grant_type: 'client_credentials' },
      {
        authorization: `Basic ${Buffer.from(`${op.clients.basic.clientId}:${op.clients.basic.clientSecret}`).toString('base64')}`,
      },
    );
    expect(basic.status).toBe(200);
    const { payload } = await verify(basic.body.access_token!);
    expect(payload.aud).toBe(op.audience);
    expect(payload.groups).toEqual(['machines']);

    const post = await token({
      grant_type: 'client_credentials',
      client_id: op.clients.post.clientId,
      client_secret: op.clients.post.clientSecret,
    });
    expect(post.status).toBe(200);

    const key = await importPKCS8(op.clients.privateKeyJwt.privateKeyPem, 'RS256');
    const assertion = await new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: op.clients.privateKeyJwt.kid })
      .setIssuer(op.clients.privateKeyJwt.clientId)
      .setSubject(op.clients.privateKeyJwt.clientId)
      .setAudience(op.issuer)
      .setJti(randomBytes(8).toString('hex'))
      .setIssuedAt()
      .setExpirationTime('60s')
      .sign(key);
    const jwt = await token({
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: assertion,
    });
    expect(jwt.status).toBe(200);
    expect(decodeJwt(jwt.body.access_token!).sub).toBe(op.clients.privateKeyJwt.clientId);
  });

  it('exchanges a harness-signed subject token (RFC 8693) without client authentication, and rejects a forged one', async () => {
    const ok = await token({
      grant_type: TOKEN_EXCHANGE_GRANT,
      client_id: op.clients.exchange.clientId,
      subject_token: await op.signSubjectToken({ sub: 'system:serviceaccount:fleet:ctrl' }),
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    });
    expect(ok.status).toBe(200);
    expect(ok.body.issued_token_type).toBe('urn:ietf:params:oauth:token-type:access_token');
    const { payload } = await verify(ok.body.access_token!);
    expect(payload.sub).toBe('system:serviceaccount:fleet:ctrl');
    expect(payload.aud).toBe(op.audience);

    const bad = await token({
      grant_type: TOKEN_EXCHANGE_GRANT,
      client_id: op.clients.exchange.clientId,
      subject_token: await op.signSubjectToken({ iss: 'https://elsewhere.test' }),
      subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_grant');
  });

  it('runs the device flow approved programmatically, with rotating refresh tokens', async () => {
    const res = await fetch(`${op.issuer}/device/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: op.clients.cli.clientId,
        scope: 'openid groups offline_access',
      }).toString(),
      dispatcher: op.dispatcher,
    });
    const device = (await res.json()) as Record<string, string>;
    expect(device.user_code).toBeTruthy();
    const pending = await token({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      client_id: op.clients.cli.clientId,
      device_code: device.device_code!,
    });
    expect(pending.body.error).toBe('authorization_pending');
    await op.approveDeviceCode(device.user_code!, { login: 'bob' });
    const done = await token({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      client_id: op.clients.cli.clientId,
      device_code: device.device_code!,
    });
    expect(done.status).toBe(200);
    const id = await verify(done.body.id_token!);
    expect(id.payload.sub).toBe('bob');
    expect(id.payload.groups).toEqual(['developers']);
    expect(done.body.refresh_token).toBeTruthy();

    const refreshed = await token({
      grant_type: 'refresh_token',
      client_id: op.clients.cli.clientId,
      refresh_token: done.body.refresh_token!,
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(done.body.refresh_token);
    const reused = await token({
      grant_type: 'refresh_token',
      client_id: op.clients.cli.clientId,
      refresh_token: done.body.refresh_token!,
    });
    expect(reused.body.error).toBe('invalid_grant');
  });

  it('follows authorization code + PKCE through the interaction pages to a loopback redirect', async () => {
    let received: URL | undefined;
    const server = createServer((req, res) => {
      received = new URL(req.url!, 'http://127.0.0.1');
      res.end('you may close this window');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
    const verifier = randomBytes(32).toString('base64url');
    const url = new URL(`${op.issuer}/auth`);
    url.search = new URLSearchParams({
      client_id: op.clients.cli.clientId,
      response_type: 'code',
      scope: 'openid groups offline_access',
      prompt: 'consent',
      redirect_uri: redirectUri,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: 's1',
      nonce: 'n1',
    }).toString();
    const result = await op.login(url.toString(), { login: 'carol' });
    server.close();
    expect(result.body).toBe('you may close this window');
    expect(received?.searchParams.get('state')).toBe('s1');
    const code = received!.searchParams.get('code')!;
    const done = await token({
      grant_type: 'authorization_code',
      client_id: op.clients.cli.clientId,
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    });
    expect(done.status).toBe(200);
    const id = await verify(done.body.id_token!);
    expect(id.payload).toMatchObject({ sub: 'carol', nonce: 'n1', aud: op.clients.cli.clientId });
    expect((await verify(done.body.access_token!)).payload.aud).toBe(op.audience);
    expect(done.body.refresh_token).toBeTruthy();
    expect(await op.revokeRefreshTokens()).toBeGreaterThan(0);
    const revoked = await token({
      grant_type: 'refresh_token',
      client_id: op.clients.cli.clientId,
      refresh_token: done.body.refresh_token!,
    });
    expect(revoked.body.error).toBe('invalid_grant');
  });
});

describe('test OpenID Provider from another process', () => {
  it('approveDeviceCodeAt works with only the issuer URL and its CA (what a vitest worker gets from globalSetup)', async () => {
    const res = await fetch(`${op.issuer}/device/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: op.clients.cli.clientId, scope: 'openid' }).toString(),
      dispatcher: op.dispatcher,
    });
    const device = (await res.json()) as Record<string, string>;
    await approveDeviceCodeAt({ issuer: op.issuer, caPem: op.caPem }, device.user_code!, { login: 'dave' });
    const done = await token({
      grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
      client_id: op.clients.cli.clientId,
      device_code: device.device_code!,
    });
    expect(done.status).toBe(200);
    expect((await verify(done.body.id_token!)).payload.sub).toBe('dave');
  });
});
