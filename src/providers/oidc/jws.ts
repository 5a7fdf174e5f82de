/**
 * A JWT's signature (compact JWS, RFC 7515) and claims (RFC 7519 §4.1) checked against the issuer's JWKS (RFC 7517),
 * with node:crypto's one-shot `verify`, for the asymmetric algorithms of RFC 7518 §3.3–3.5 and RFC 8037 (RS*, PS*,
 * ES*, EdDSA / Ed25519). Key selection follows jose's local JWKS (kty for the algorithm, then `kid`, `alg`, `use`,
 * `key_ops` and the curve when the key states them; several candidates are each tried), and a test compares every
 * verdict with jose's on the same tokens.
 *
 * Why not jose here: its verification runs through WebCrypto, whose first use loads Node's WebCrypto modules and
 * verifies on the libuv thread pool (four threads started): a cold process pays for both, this module for neither.
 */
import type { JsonWebKey as NodeJwk, KeyObject } from 'node:crypto';

export type JwsFailure =
  | 'malformed'
  | 'alg-not-allowed'
  | 'no-matching-key'
  | 'several-keys-none-verifies'
  | 'bad-signature'
  | 'expired'
  | 'not-yet-valid'
  | 'wrong-issuer'
  | 'wrong-audience'
  | 'missing-claim'
  | 'invalid-claim';

/** A token that does not verify, and which check refused it (`claim`: the claim concerned). */
export class JwsError extends Error {
  override readonly name = 'JwsError';
  readonly failure: JwsFailure;
  readonly claim: string | undefined;

  constructor(failure: JwsFailure, message: string, claim?: string) {
    super(message);
    this.failure = failure;
    this.claim = claim;
  }
}

export interface Jwk {
  kty?: string;
  kid?: string;
  alg?: string;
  use?: string;
  key_ops?: string[];
  crv?: string;
  [member: string]: unknown;
}

export interface JwtExpectations {
  /** The allowed algorithms (asymmetric ones only; anything else is never accepted). */
  algorithms: readonly string[];
  issuer: string;
  audience: string;
  /** Seconds since the epoch. */
  now: number;
  /** Seconds of clock skew accepted for `exp` and `nbf`. */
  clockTolerance: number;
  /** Claims that must be present. */
  requiredClaims: readonly string[];
}

interface Algorithm {
  kty: 'RSA' | 'EC' | 'OKP';
  /** The digest for node:crypto's verify (null: the algorithm hashes itself, Ed25519). */
  hash: string | null;
  /** EC: the JWK curve and the raw signature's length (r || s). */
  crv?: string;
  signatureBytes?: number;
  pss?: boolean;
}

const ALGORITHMS: Record<string, Algorithm> = {
  RS256: { kty: 'RSA', hash: 'sha256' },
  RS384: { kty: 'RSA', hash: 'sha384' },
  RS512: { kty: 'RSA', hash: 'sha512' },
  PS256: { kty: 'RSA', hash: 'sha256', pss: true },
  PS384: { kty: 'RSA', hash: 'sha384', pss: true },
  PS512: { kty: 'RSA', hash: 'sha512', pss: true },
  ES256: { kty: 'EC', hash: 'sha256', crv: 'P-256', signatureBytes: 64 },
  ES384: { kty: 'EC', hash: 'sha384', crv: 'P-384', signatureBytes: 96 },
  ES512: { kty: 'EC', hash: 'sha512', crv: 'P-521', signatureBytes: 132 },
  EdDSA: { kty: 'OKP', hash: null, crv: 'Ed25519' },
  Ed25519: { kty: 'OKP', hash: null, crv: 'Ed25519' },
};

const SEGMENT = /^[A-Za-z0-9_-]+$/;

function malformed(reason: string): JwsError {
  return new JwsError('malformed', reason);
}

function jsonObject(segment: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    throw malformed(`the ${what} is not base64url-encoded JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw malformed(`the ${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

/** The claims of a compact JWT, not verified: for messages about a token whose signature was good. */
export function unverifiedClaims(jwt: string): Record<string, unknown> {
  const parts = jwt.split('.');
  if (parts.length !== 3 || !SEGMENT.test(parts[1]!)) throw malformed('a JWT has three base64url parts');
  return jsonObject(parts[1]!, 'JWT claims set');
}

/** The JWKS keys that may have signed with `alg` under `kid` (jose's local JWKS selection). */
function candidates(keys: readonly Jwk[], alg: string, algorithm: Algorithm, kid: unknown): Jwk[] {
  return keys.filter(
    (jwk) =>
      jwk.kty === algorithm.kty &&
      (typeof kid !== 'string' || jwk.kid === kid) &&
      (typeof jwk.alg !== 'string' || jwk.alg === alg) &&
      (typeof jwk.use !== 'string' || jwk.use === 'sig') &&
      (!Array.isArray(jwk.key_ops) || jwk.key_ops.includes('verify')) &&
      (algorithm.crv === undefined || jwk.crv === algorithm.crv),
  );
}

/** The key's public half; undefined when it is not a usable key for the algorithm (RSA under 2048 bits included). */
function importKey(jwk: Jwk, algorithm: Algorithm): KeyObject | undefined {
  const { createPublicKey } = process.getBuiltinModule('node:crypto');
  let key: KeyObject;
  try {
    // Only the public members: a JWKS that (wrongly) publishes a private key still yields its public half.
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, oth: _oth, ...publicMembers } = jwk;
    key = createPublicKey({ key: publicMembers as NodeJwk, format: 'jwk' });
  } catch {
    return undefined;
  }
  if (algorithm.kty === 'RSA') return (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048 ? key : undefined;
  return key;
}

function verifies(key: KeyObject, algorithm: Algorithm, data: Buffer, signature: Buffer): boolean {
  const { constants, verify } = process.getBuiltinModule('node:crypto');
  if (algorithm.signatureBytes !== undefined && signature.length !== algorithm.signatureBytes) return false;
  try {
    if (algorithm.pss === true) {
      const saltLength = { sha256: 32, sha384: 48, sha512: 64 }[algorithm.hash as 'sha256'];
      return verify(algorithm.hash, data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }, signature);
    }
    if (algorithm.kty === 'EC') return verify(algorithm.hash, data, { key, dsaEncoding: 'ieee-p1363' }, signature);
    return verify(algorithm.hash, data, key, signature);
  } catch {
    return false;
  }
}

/**
 * Verifies `jwt` against `jwks` and `expect`, or throws a {@link JwsError}: the signature first (so nothing is read
 * from a token nobody vouched for), then `iss`, `aud`, `exp`, `nbf` and the required claims.
 */
export function verifyJwt(
  jwt: string,
  jwks: { keys?: unknown },
  expect: JwtExpectations,
): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const parts = jwt.split('.');
  if (parts.length !== 3) throw malformed('a JWT has three parts separated by dots');
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  if (!SEGMENT.test(headerPart) || !SEGMENT.test(payloadPart) || !SEGMENT.test(signaturePart)) {
    throw malformed('a part is empty or not base64url');
  }
  const header = jsonObject(headerPart, 'protected header');
  const alg = header['alg'];
  if (typeof alg !== 'string') throw malformed('the protected header has no "alg"');
  if (header['crit'] !== undefined)
    throw malformed('the protected header names critical extensions ("crit"), none of which is supported');
  const algorithm = Object.hasOwn(ALGORITHMS, alg) ? ALGORITHMS[alg] : undefined;
  if (algorithm === undefined || !expect.algorithms.includes(alg)) {
    throw new JwsError('alg-not-allowed', `"alg" ${JSON.stringify(alg)} is not allowed`);
  }
  const keys = Array.isArray(jwks.keys)
    ? (jwks.keys as unknown[]).filter((key): key is Jwk => typeof key === 'object' && key !== null)
    : [];
  const found = candidates(keys, alg, algorithm, header['kid']);
  if (found.length === 0) throw new JwsError('no-matching-key', 'no key of the JWKS matches the token');
  const data = Buffer.from(`${headerPart}.${payloadPart}`, 'ascii');
  const signature = Buffer.from(signaturePart, 'base64url');
  const good = found.some((jwk) => {
    const key = importKey(jwk, algorithm);
    return key !== undefined && verifies(key, algorithm, data, signature);
  });
  if (!good) {
    throw found.length > 1
      ? new JwsError('several-keys-none-verifies', 'several keys of the JWKS match and none verifies')
      : new JwsError('bad-signature', 'the signature does not verify');
  }

  const payload = jsonObject(payloadPart, 'JWT claims set');
  checkClaims(payload, expect);
  return { header, payload };
}

function checkClaims(payload: Record<string, unknown>, expect: JwtExpectations): void {
  for (const claim of expect.requiredClaims) {
    if (payload[claim] === undefined) throw new JwsError('missing-claim', `the "${claim}" claim is missing`, claim);
  }
  const numeric = (claim: string): number | undefined => {
    const value = payload[claim];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw new JwsError('invalid-claim', `the "${claim}" claim is not a number`, claim);
    return value;
  };
  for (const claim of ['iss', 'sub', 'jti']) {
    if (payload[claim] !== undefined && typeof payload[claim] !== 'string')
      throw new JwsError('invalid-claim', `the "${claim}" claim is not a string`, claim);
  }
  const aud = payload['aud'];
  if (
    aud !== undefined &&
    typeof aud !== 'string' &&
    !(Array.isArray(aud) && aud.every((entry) => typeof entry === 'string'))
  ) {
    throw new JwsError('invalid-claim', 'the "aud" claim is neither a string nor an array of strings', 'aud');
  }
  numeric('iat');
  const exp = numeric('exp');
  const nbf = numeric('nbf');
  if (payload['iss'] !== expect.issuer) throw new JwsError('wrong-issuer', 'unexpected "iss" claim value', 'iss');
  if (!(typeof aud === 'string' ? aud === expect.audience : Array.isArray(aud) && aud.includes(expect.audience))) {
    throw new JwsError('wrong-audience', 'unexpected "aud" claim value', 'aud');
  }
  if (exp !== undefined && exp <= expect.now - expect.clockTolerance)
    throw new JwsError('expired', '"exp" claim timestamp check failed', 'exp');
  if (nbf !== undefined && nbf > expect.now + expect.clockTolerance)
    throw new JwsError('not-yet-valid', '"nbf" claim timestamp check failed', 'nbf');
}
