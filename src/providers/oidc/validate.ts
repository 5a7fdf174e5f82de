/**
 * Token validation before anything is printed or cached (OpenID Connect Core §3.1.3.7; RFC 9068 for JWT access
 * tokens): signature with the issuer's published key, an algorithm allowlist (asymmetric only: no `none`, no
 * HS256-with-the-public-key confusion), `iss`, `aud`, `azp`, `exp`, `nbf`, `nonce`. `jws.ts` does the JOSE work; this
 * module chooses what to require and translates its refusals into `ERR_OIDC_TOKEN_INVALID`.
 */
import type { JSONWebKeySet, JWTPayload } from 'jose';
import { CredentialsError } from '../../base/errors.js';
import { JwsError, unverifiedClaims, verifyJwt, type JwsFailure } from './jws.js';

export interface TokenExpectations {
  /** Which token, for messages: 'ID token' or 'access token'. */
  what: string;
  issuer: string;
  /** The audience the token must contain (client ID for ID tokens, the resource for access tokens). */
  audience: string;
  /** For ID tokens: if `aud` has several values, `azp` must be this (Core §3.1.3.7 step 4-5). */
  authorizedParty?: string;
  /** For ID tokens of the code flow: the nonce sent in the authorization request. */
  nonce?: string;
  algorithms: readonly string[];
  now: Date;
  /** Seconds of clock skew accepted for `nbf` / `iat` (default 30). `exp` must still be in the future. */
  clockToleranceSeconds?: number;
}

export interface ValidatedToken {
  payload: JWTPayload & { exp: number };
}

/** Asymmetric JWS algorithms only; anything else in an allowlist is a programming error. */
const ASYMMETRIC = /^(RS|PS|ES)(256|384|512)$|^EdDSA$|^Ed25519$/;

function invalid(o: TokenExpectations, reason: string, cause?: unknown, hint?: string): CredentialsError {
  return new CredentialsError(
    'ERR_OIDC_TOKEN_INVALID',
    `the ${o.what} from ${o.issuer} failed validation: ${reason}; it was not used`,
    {
      path: o.issuer,
      hint:
        hint ??
        "the issuer returned a token this cluster would reject (or that was tampered with): check issuerURL, clientID, audience and the issuer's signing keys",
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

/** The token's `aud` as the message shows it (the signature was good: only the audience was wrong). */
function audienceOf(jwt: string): string {
  try {
    return JSON.stringify(unverifiedClaims(jwt)['aud'] ?? null);
  } catch {
    return 'unreadable';
  }
}

const AUDIENCE_HINT =
  'the issuer made the token for another audience: set audience to what the API server expects and have the issuer put it in "aud" (RFC 8707 resource or audience; Dex ignores both: add the scope audience:server:client_id:<audience> and list this client in that client\'s trustedPeers)';

/**
 * Verifies `jwt` against the issuer's JWKS and the expectations. Throws `ERR_OIDC_TOKEN_INVALID` naming the failed
 * check. Returns the payload (with a numeric `exp`: tokens without one are refused, we could not cache them safely).
 *
 * @example
 * ```ts
 * const { payload } = await validateToken(idToken, jwks, { what: 'ID token', issuer, audience: clientID, algorithms: ['RS256'], now: new Date() });
 * ```
 */
export async function validateToken(jwt: string, jwks: JSONWebKeySet, o: TokenExpectations): Promise<ValidatedToken> {
  const algorithms = o.algorithms.filter((alg) => ASYMMETRIC.test(alg));
  if (algorithms.length === 0) throw new TypeError('validateToken needs at least one asymmetric algorithm');
  const tolerance = o.clockToleranceSeconds ?? 30;
  let payload: JWTPayload;
  try {
    ({ payload } = verifyJwt(jwt, jwks, {
      issuer: o.issuer,
      audience: o.audience,
      algorithms,
      now: Math.floor(o.now.getTime() / 1000),
      clockTolerance: tolerance,
      requiredClaims: ['exp', 'iss', 'aud', 'sub'],
    }));
  } catch (error) {
    if (error instanceof JwsError && error.failure === 'wrong-audience') {
      throw invalid(
        o,
        `wrong audience ("aud"): the token is for ${audienceOf(jwt)}, not ${JSON.stringify(o.audience)}`,
        error,
        AUDIENCE_HINT,
      );
    }
    throw invalid(o, describe(error), error);
  }
  const nowSeconds = Math.floor(o.now.getTime() / 1000);
  const exp = payload.exp as number;
  // jose tolerated up to `tolerance` seconds past exp: a token that is already expired is no use to anyone.
  if (exp <= nowSeconds) throw invalid(o, `expired at ${new Date(exp * 1000).toISOString()} ("exp")`);
  if (o.authorizedParty !== undefined) {
    const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (payload['azp'] !== undefined && payload['azp'] !== o.authorizedParty) {
      throw invalid(
        o,
        `"azp" is ${JSON.stringify(payload['azp'])}, not the client ${JSON.stringify(o.authorizedParty)}`,
      );
    }
    if (audiences.length > 1 && payload['azp'] === undefined) throw invalid(o, 'several audiences but no "azp" claim');
  }
  if (o.nonce !== undefined && payload['nonce'] !== o.nonce) {
    throw invalid(
      o,
      payload['nonce'] === undefined
        ? 'no "nonce" claim (replay protection)'
        : '"nonce" does not match the login (a replayed or injected token)',
    );
  }
  return { payload: payload as JWTPayload & { exp: number } };
}

const REASONS: Record<
  Exclude<JwsFailure, 'malformed' | 'missing-claim' | 'invalid-claim' | 'wrong-audience'>,
  string
> = {
  expired: 'expired ("exp")',
  'not-yet-valid': 'not valid yet ("nbf" is in the future)',
  'wrong-issuer': 'wrong issuer ("iss")',
  'alg-not-allowed':
    'signed with an algorithm that is not allowed ("alg" must be one of the asymmetric allowlist; none and HS* are refused)',
  'bad-signature': 'bad signature',
  'no-matching-key': 'no key of the issuer\'s JWKS matches the token ("kid" / "alg")',
  'several-keys-none-verifies': "several keys of the issuer's JWKS match and none verifies",
};

function describe(error: unknown): string {
  if (!(error instanceof JwsError)) return error instanceof Error ? error.message : String(error);
  switch (error.failure) {
    case 'malformed':
      return `not a valid JWT (${error.message})`;
    case 'missing-claim':
      return `claim "${error.claim}" is missing`;
    case 'invalid-claim':
      return `claim "${error.claim}" is invalid`;
    case 'wrong-audience':
      return 'wrong audience ("aud")';
    default:
      return REASONS[error.failure];
  }
}

/**
 * When the credential must be considered expired: before the token's `exp` by a margin (a tenth of the remaining
 * lifetime, at most 60 s) so a request sent with it does not arrive after `exp` (kubelogin #754).
 */
export function expirationWithMargin(exp: number, now: Date): Date {
  const remainingMs = exp * 1000 - now.getTime();
  const marginMs = Math.min(60_000, Math.floor(remainingMs / 10));
  return new Date(exp * 1000 - marginMs);
}
