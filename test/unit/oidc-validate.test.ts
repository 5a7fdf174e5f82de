// Token validation before anything is printed or cached: tokens made with jose, a frozen clock.
import { createSecretKey } from 'node:crypto';
import {
  exportJWK,
  exportSPKI,
  generateKeyPair,
  SignJWT,
  type JSONWebKeySet,
  type JWTPayload,
  type CryptoKey,
} from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { isCredentialsError } from '../../src/base/errors.js';
import { expirationWithMargin, validateToken, type TokenExpectations } from '../../src/providers/oidc/validate.js';

const NOW = new Date('2026-01-01T12:00:00Z');
const nowS = Math.floor(NOW.getTime() / 1000);
const ISSUER = 'https://issuer.test';
const CLIENT = 'kubectl';

let key: CryptoKey;
let otherKey: CryptoKey;
let jwks: JSONWebKeySet;
let publicPem: string;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  key = pair.privateKey;
  otherKey = (await generateKeyPair('RS256')).privateKey;
  jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] };
  publicPem = await exportSPKI(pair.publicKey);
});

const claims = (over: JWTPayload = {}): JWTPayload => ({
  iss: ISSUER,
  aud: CLIENT,
  sub: 'alice',
  iat: nowS - 10,
  exp: nowS + 600,
  ...over,
});
const sign = (payload: JWTPayload, signingKey: CryptoKey = key, kid = 'k1') =>
  new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid }).sign(signingKey);
const expect_ = (over: Partial<TokenExpectations> = {}): TokenExpectations => ({
  what: 'ID token',
  issuer: ISSUER,
  audience: CLIENT,
  authorizedParty: CLIENT,
  algorithms: ['RS256', 'ES256'],
  now: NOW,
  ...over,
});

async function rejection(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(isCredentialsError(error) && error.code).toBe('ERR_OIDC_TOKEN_INVALID');
    return (error as Error).message;
  }
  throw new Error('expected a rejection');
}

describe('validateToken', () => {
  it('accepts a well-formed token and returns its claims', async () => {
    const { payload } = await validateToken(await sign(claims({ nonce: 'n' })), jwks, expect_({ nonce: 'n' }));
    expect(payload).toMatchObject({ sub: 'alice', exp: nowS + 600 });
  });

  it('refuses a bad signature (signed by another key with the same kid)', async () => {
    expect(await rejection(validateToken(await sign(claims(), otherKey), jwks, expect_()))).toContain('bad signature');
  });

  it('refuses a tampered payload', async () => {
    const [h, , s] = (await sign(claims())).split('.');
    const forged = Buffer.from(JSON.stringify(claims({ sub: 'root' }))).toString('base64url');
    expect(await rejection(validateToken(`${h}.${forged}.${s}`, jwks, expect_()))).toContain('bad signature');
  });

  it('refuses alg none (an unsigned token)', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const body = Buffer.from(JSON.stringify(claims())).toString('base64url');
    const message = await rejection(validateToken(`${header}.${body}.`, jwks, expect_()));
    expect(message).toMatch(/algorithm|not a valid JWT/);
  });

  it('refuses HS256 signed with the issuer public key as the HMAC secret (key confusion)', async () => {
    const secret = createSecretKey(Buffer.from(publicPem));
    const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).sign(secret);
    expect(await rejection(validateToken(token, jwks, expect_()))).toContain('algorithm');
    // Even if a caller put HS256 in the list, the validator keeps only asymmetric algorithms.
    expect(await rejection(validateToken(token, jwks, expect_({ algorithms: ['RS256', 'HS256'] })))).toContain(
      'algorithm',
    );
  });

  it('refuses an algorithm outside the allowlist (RS256 token, ES256-only list)', async () => {
    expect(await rejection(validateToken(await sign(claims()), jwks, expect_({ algorithms: ['ES256'] })))).toContain(
      'algorithm',
    );
  });

  it('refuses a wrong audience', async () => {
    expect(await rejection(validateToken(await sign(claims({ aud: 'someone-else' })), jwks, expect_()))).toContain(
      'audience',
    );
  });

  it('refuses a wrong issuer', async () => {
    expect(await rejection(validateToken(await sign(claims({ iss: 'https://evil.test' })), jwks, expect_()))).toContain(
      'issuer',
    );
  });

  it('refuses an expired token, even inside the clock tolerance', async () => {
    expect(await rejection(validateToken(await sign(claims({ exp: nowS - 3600 })), jwks, expect_()))).toContain(
      'expired',
    );
    expect(await rejection(validateToken(await sign(claims({ exp: nowS - 5 })), jwks, expect_()))).toContain('expired');
  });

  it('refuses a token that is not valid yet (nbf beyond the tolerance), accepts small skew', async () => {
    expect(await rejection(validateToken(await sign(claims({ nbf: nowS + 600 })), jwks, expect_()))).toContain(
      'not valid yet',
    );
    await expect(validateToken(await sign(claims({ nbf: nowS + 10 })), jwks, expect_())).resolves.toBeDefined();
  });

  it('refuses a token without exp (it could not be cached safely)', async () => {
    const { exp: _exp, ...noExp } = claims();
    expect(await rejection(validateToken(await sign(noExp), jwks, expect_()))).toContain('"exp"');
  });

  it('checks the nonce of a code-flow ID token', async () => {
    expect(
      await rejection(validateToken(await sign(claims({ nonce: 'other' })), jwks, expect_({ nonce: 'mine' }))),
    ).toContain('nonce');
    expect(await rejection(validateToken(await sign(claims()), jwks, expect_({ nonce: 'mine' })))).toContain('nonce');
  });

  it('checks azp when present or when there are several audiences', async () => {
    expect(await rejection(validateToken(await sign(claims({ azp: 'other-client' })), jwks, expect_()))).toContain(
      'azp',
    );
    expect(await rejection(validateToken(await sign(claims({ aud: [CLIENT, 'x'] })), jwks, expect_()))).toContain(
      'azp',
    );
    await expect(
      validateToken(await sign(claims({ aud: [CLIENT, 'x'], azp: CLIENT })), jwks, expect_()),
    ).resolves.toBeDefined();
  });

  it('refuses a token whose kid is not in the JWKS', async () => {
    expect(await rejection(validateToken(await sign(claims(), key, 'unknown'), jwks, expect_()))).toContain('no key');
  });

  it('names the token and says it was not used', async () => {
    const message = await rejection(
      validateToken(
        await sign(claims({ aud: 'x' })),
        jwks,
        expect_({ what: 'access token', audience: 'https://k8s', authorizedParty: undefined }),
      ),
    );
    expect(message).toMatch(/^the access token from https:\/\/issuer\.test failed validation: .*; it was not used$/);
  });
});

describe('expirationWithMargin', () => {
  it('reports expiry 60 s before exp for long-lived tokens, a tenth of the remaining life for short ones', () => {
    expect(expirationWithMargin(nowS + 3600, NOW).toISOString()).toBe(
      new Date((nowS + 3600 - 60) * 1000).toISOString(),
    );
    expect(expirationWithMargin(nowS + 100, NOW).toISOString()).toBe(new Date((nowS + 90) * 1000).toISOString());
  });
});
