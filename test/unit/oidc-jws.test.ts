// JWT verification with node:crypto (src/providers/oidc/jws.ts) side by side with jose on the same tokens and key
// sets: every algorithm of the allowlist, key selection, tampering, and each claim check. jose (which signs the
// tokens here) is the reference: the two must agree on every verdict.
import { generateKeyPairSync, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { createLocalJWKSet, errors as joseErrors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { describe, expect, it } from 'vitest';
import { JwsError, verifyJwt, type Jwk } from '../../src/providers/oidc/jws.js';

const NOW = 1_800_000_000;
const ISSUER = 'https://issuer.test';
const AUDIENCE = 'kubectl';
const ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

type Pair = { privateKey: KeyObject; publicKey: KeyObject };
const rsa = (): Pair => generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = (namedCurve: string): Pair => generateKeyPairSync('ec', { namedCurve });
const ed = (): Pair => generateKeyPairSync('ed25519');
const keys = {
  rsa: rsa(),
  rsa2: rsa(),
  p256: ec('P-256'),
  p384: ec('P-384'),
  p521: ec('P-521'),
  ed: ed(),
  ed2: ed(),
  weak: generateKeyPairSync('rsa', { modulusLength: 1024 }),
};
const KEY_FOR: Record<string, Pair> = {
  RS256: keys.rsa,
  RS384: keys.rsa,
  RS512: keys.rsa,
  PS256: keys.rsa,
  PS384: keys.rsa,
  PS512: keys.rsa,
  ES256: keys.p256,
  ES384: keys.p384,
  ES512: keys.p521,
  EdDSA: keys.ed,
  Ed25519: keys.ed,
};

const jwk = (pair: Pair, extra: Partial<Jwk> = {}): Jwk => ({
  ...(pair.publicKey.export({ format: 'jwk' }) as Jwk),
  ...extra,
});
const claims = (over: JWTPayload = {}): JWTPayload => ({
  iss: ISSUER,
  aud: AUDIENCE,
  sub: 'alice',
  iat: NOW - 10,
  exp: NOW + 600,
  ...over,
});
const sign = (
  alg: string,
  pair: Pair,
  payload: JWTPayload = claims(),
  header: Record<string, unknown> = { kid: 'k1' },
) => new SignJWT(payload).setProtectedHeader({ alg, ...header }).sign(pair.privateKey);
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
/** A token jose's SignJWT would not make (payload or header as given), signed RS256 with `pair`. */
const raw = (header: unknown, payload: unknown, pair: Pair = keys.rsa): string => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${cryptoSign('sha256', Buffer.from(input), pair.privateKey).toString('base64url')}`;
};

/** One verdict class for both implementations. */
function ours(token: string, keySet: Jwk[], algorithms = ALGORITHMS): string {
  try {
    verifyJwt(
      token,
      { keys: keySet },
      {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms,
        now: NOW,
        clockTolerance: 30,
        requiredClaims: ['exp', 'iss', 'aud', 'sub'],
      },
    );
    return 'ok';
  } catch (error) {
    if (!(error instanceof JwsError)) throw error;
    return error.failure === 'malformed' || error.failure === 'invalid-claim' ? 'invalid' : error.failure;
  }
}

async function joses(token: string, keySet: Jwk[], algorithms = ALGORITHMS): Promise<string> {
  try {
    await jwtVerify(token, createLocalJWKSet({ keys: keySet as never }), {
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms,
      currentDate: new Date(NOW * 1000),
      clockTolerance: 30,
      requiredClaims: ['exp', 'iss', 'aud', 'sub'],
    });
    return 'ok';
  } catch (error) {
    if (error instanceof joseErrors.JOSEAlgNotAllowed) return 'alg-not-allowed';
    if (error instanceof joseErrors.JWKSNoMatchingKey) return 'no-matching-key';
    if (error instanceof joseErrors.JWKSMultipleMatchingKeys) return 'several-keys-none-verifies';
    if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'bad-signature';
    if (error instanceof joseErrors.JWTExpired) return 'expired';
    if (error instanceof joseErrors.JWTClaimValidationFailed) {
      if (error.reason === 'missing') return 'missing-claim';
      return { nbf: 'not-yet-valid', iss: 'wrong-issuer', aud: 'wrong-audience' }[error.claim] ?? 'invalid';
    }
    if (
      error instanceof joseErrors.JWSInvalid ||
      error instanceof joseErrors.JWTInvalid ||
      error instanceof joseErrors.JOSENotSupported
    )
      return 'invalid';
    return `refused: ${(error as Error).message}`;
  }
}

async function agree(token: string, keySet: Jwk[], expected: string, algorithms = ALGORITHMS): Promise<void> {
  expect(ours(token, keySet, algorithms)).toBe(expected);
  expect(await joses(token, keySet, algorithms)).toBe(expected);
}

/** Where jose names another reason (or none of its classes), both must still refuse. */
async function bothRefuse(token: string, keySet: Jwk[], expected: string, algorithms = ALGORITHMS): Promise<void> {
  expect(ours(token, keySet, algorithms)).toBe(expected);
  expect(await joses(token, keySet, algorithms)).not.toBe('ok');
}

describe('verifyJwt agrees with jose', () => {
  it('accepts a good token of every allowed algorithm, and refuses it tampered', async () => {
    for (const alg of ALGORITHMS) {
      const pair = KEY_FOR[alg]!;
      const keySet = [jwk(pair, { kid: 'k1', use: 'sig' })];
      const token = await sign(alg, pair);
      await agree(token, keySet, 'ok');
      const [h, , s] = token.split('.');
      await agree(`${h}.${b64(claims({ sub: 'root' }))}.${s}`, keySet, 'bad-signature');
      const signature = Buffer.from(s!, 'base64url');
      signature[signature.length - 1]! ^= 1;
      await agree(`${h}.${token.split('.')[1]}.${signature.toString('base64url')}`, keySet, 'bad-signature');
    }
  });

  it('selects keys as jose does: kid, kty, alg, use, key_ops, curve; several candidates are each tried', async () => {
    const token = await sign('RS256', keys.rsa);
    await agree(token, [jwk(keys.rsa2, { kid: 'k1' })], 'bad-signature');
    await agree(
      await sign('RS256', keys.rsa, claims(), { kid: 'other' }),
      [jwk(keys.rsa, { kid: 'k1' })],
      'no-matching-key',
    );
    await agree(token, [jwk(keys.rsa, { kid: 'k1', use: 'enc' })], 'no-matching-key');
    await agree(token, [jwk(keys.rsa, { kid: 'k1', key_ops: ['encrypt'] })], 'no-matching-key');
    await agree(token, [jwk(keys.rsa, { kid: 'k1', key_ops: ['verify'] })], 'ok');
    await agree(token, [jwk(keys.rsa, { kid: 'k1', alg: 'RS384' })], 'no-matching-key');
    await agree(await sign('ES256', keys.p256), [jwk(keys.p384, { kid: 'k1' })], 'no-matching-key');
    await agree(await sign('ES256', keys.p256), [jwk(keys.rsa, { kid: 'k1' })], 'no-matching-key');
    // A token without kid and several candidate keys: each is tried, as the API server's OIDC authenticator
    // (go-oidc) does; jose's jwtVerify refuses them all at once (JWKSMultipleMatchingKeys). On purpose.
    const noKid = await sign('EdDSA', keys.ed, claims(), {});
    expect(ours(noKid, [jwk(keys.ed2, { kid: 'a' }), jwk(keys.ed, { kid: 'b' })])).toBe('ok');
    await agree(noKid, [jwk(keys.ed2, { kid: 'a' }), jwk(keys.ed2, { kid: 'b' })], 'several-keys-none-verifies');
  });

  it('refuses algorithms outside the list, and never accepts none or HMAC', async () => {
    await agree(await sign('RS256', keys.rsa), [jwk(keys.rsa, { kid: 'k1' })], 'alg-not-allowed', ['ES256']);
    // HS256 in the caller's list (validate.ts never passes one): ours has no HMAC at all, jose refuses HMAC with a JWKS.
    await bothRefuse(raw({ alg: 'HS256', kid: 'k1' }, claims()), [jwk(keys.rsa, { kid: 'k1' })], 'alg-not-allowed', [
      'RS256',
      'HS256',
    ]);
    // alg none: an empty signature part (ours: not a JWT) or the algorithm (jose): refused either way.
    const none = `${b64({ alg: 'none' })}.${b64(claims())}.`;
    expect(ours(none, [jwk(keys.rsa)])).not.toBe('ok');
    expect(await joses(none, [jwk(keys.rsa)])).not.toBe('ok');
  });

  it('refuses an RSA key under 2048 bits', async () => {
    const token = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .sign(keys.weak.privateKey)
      .catch(() => raw({ alg: 'RS256', kid: 'k1' }, claims(), keys.weak));
    expect(ours(token, [jwk(keys.weak, { kid: 'k1' })])).toBe('bad-signature');
    expect(await joses(token, [jwk(keys.weak, { kid: 'k1' })])).not.toBe('ok');
  });

  it('refuses what is not a JWS compact JWT: parts, encoding, header, payload, critical extensions', async () => {
    const keySet = [jwk(keys.rsa, { kid: 'k1' })];
    const token = await sign('RS256', keys.rsa);
    for (const bad of ['', 'a.b', `${token}.x`]) await agree(bad, keySet, 'invalid');
    // An empty payload, a character outside base64url: not a JWT to us; jose decodes them and finds the signature bad.
    await bothRefuse(`${token.split('.')[0]}..${token.split('.')[2]}`, keySet, 'invalid');
    await bothRefuse(token.replace('.', '.!'), keySet, 'invalid');
    await agree(raw({ alg: 'RS256', kid: 'k1' }, ['not', 'an', 'object']), keySet, 'invalid');
    await agree(raw({ alg: 'RS256', kid: 'k1', crit: ['exp'], exp: 1 }, claims()), keySet, 'invalid');
  });

  it('checks iss, aud, exp and nbf with the clock tolerance, the required claims and claim types', async () => {
    const keySet = [jwk(keys.p256, { kid: 'k1' })];
    const token = (over: JWTPayload) => sign('ES256', keys.p256, claims(over));
    await agree(await token({ iss: 'https://evil.test' }), keySet, 'wrong-issuer');
    await agree(await token({ aud: 'someone-else' }), keySet, 'wrong-audience');
    await agree(await token({ aud: ['x', AUDIENCE] }), keySet, 'ok');
    await agree(await token({ exp: NOW - 100 }), keySet, 'expired');
    await agree(await token({ exp: NOW - 10 }), keySet, 'ok'); // inside the tolerance: validate.ts refuses it itself
    await agree(await token({ nbf: NOW + 100 }), keySet, 'not-yet-valid');
    await agree(await token({ nbf: NOW + 10 }), keySet, 'ok');
    await agree(
      await sign('ES256', keys.p256, { iss: ISSUER, aud: AUDIENCE, exp: NOW + 600 }),
      keySet,
      'missing-claim',
    );
    await agree(
      raw({ alg: 'RS256', kid: 'k1' }, claims({ iat: 'yesterday' as never })),
      [jwk(keys.rsa, { kid: 'k1' })],
      'invalid',
    );
    await agree(
      raw({ alg: 'RS256', kid: 'k1' }, claims({ exp: '2030' as never })),
      [jwk(keys.rsa, { kid: 'k1' })],
      'invalid',
    );
  });

  it('uses only the public members of a JWKS key that carries private ones', async () => {
    const withPrivate = { ...(keys.p256.privateKey.export({ format: 'jwk' }) as Jwk), kid: 'k1' };
    expect(ours(await sign('ES256', keys.p256), [withPrivate])).toBe('ok');
  });
});
