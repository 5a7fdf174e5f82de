/**
 * OpenID Connect / OAuth 2.0 messages as data (conventions: build, send, process): every exchange is a `…Request` builder returning an
 * {@link HttpRequest} and a `process…Response` function taking an {@link HttpResponse}. No network, no clock, no
 * files here: the protocol logic is testable with hand-made responses; http.ts is the thin seam that sends.
 *
 * References: OpenID Connect Discovery 1.0 §4; RFC 6749 §4.4 (client credentials), §5 (token responses), §6
 * (refresh); RFC 8693 (token exchange); RFC 8628 (device authorization); RFC 7636 (PKCE); RFC 8252 §7.3 (loopback
 * redirect); RFC 8707 (resource indicators).
 */
import { timingSafeEqual } from 'node:crypto';
import { CredentialsError, type ErrorCode } from '../../base/errors.js';

export interface HttpRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  /** application/x-www-form-urlencoded body. */
  body?: string;
}

export interface HttpResponse {
  status: number;
  /** Lower-case header names. */
  headers: Record<string, string | undefined>;
  body: string;
}

/** The subset of OpenID Provider Metadata the plugin uses. */
export interface ProviderMetadata {
  issuer: string;
  token_endpoint: string;
  jwks_uri: string;
  authorization_endpoint?: string;
  device_authorization_endpoint?: string;
  code_challenge_methods_supported?: string[];
  /** Absent when the document omits it: OpenID Connect Discovery 1.0 §3 then means `client_secret_basic` only. */
  token_endpoint_auth_methods_supported?: string[];
}

export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in?: number;
  refresh_token?: string;
  id_token?: string;
  scope?: string;
  issued_token_type?: string;
}

export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  /** Seconds between polls (default 5, RFC 8628 §3.2). */
  interval: number;
}

function error(code: ErrorCode, message: string, path: string, hint?: string): CredentialsError {
  return new CredentialsError(code, message, { path, ...(hint === undefined ? {} : { hint }) });
}

function parseJsonObject(response: HttpResponse, what: string, url: string, code: ErrorCode): Record<string, unknown> {
  let document: unknown;
  try {
    document = JSON.parse(response.body);
  } catch {
    throw error(
      code,
      `${what} is not JSON (HTTP ${response.status}, ${response.headers['content-type'] ?? 'no content type'})`,
      url,
    );
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw error(code, `${what} is not a JSON object`, url);
  }
  return document as Record<string, unknown>;
}

const form = (params: Record<string, string | undefined>): string => {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) body.set(name, value);
  return body.toString();
};

// ---------------------------------------------------------------------------------------------------- discovery

/** `GET <issuer>/.well-known/openid-configuration` (Discovery §4.1: a trailing `/` of the issuer is dropped first). */
export function discoveryRequest(issuerURL: string): HttpRequest {
  return {
    method: 'GET',
    url: `${issuerURL.replace(/\/$/, '')}/.well-known/openid-configuration`,
    headers: { accept: 'application/json' },
  };
}

/**
 * Checks the discovery document: HTTP 200, JSON, `issuer` EXACTLY the configured one (Discovery §4.3: it is what
 * every token's `iss` will be compared with), https endpoints (the optional ones too, when present).
 */
export function processDiscoveryResponse(issuerURL: string, response: HttpResponse): ProviderMetadata {
  const url = discoveryRequest(issuerURL).url;
  if (response.status !== 200) {
    throw error(
      'ERR_OIDC_DISCOVERY',
      `the issuer's discovery document answered HTTP ${response.status}`,
      url,
      'check issuerURL: it must be the issuer identifier, without /.well-known/…',
    );
  }
  const doc = parseJsonObject(response, 'the discovery document', url, 'ERR_OIDC_DISCOVERY');
  if (doc['issuer'] !== issuerURL) {
    throw error(
      'ERR_OIDC_ISSUER_MISMATCH',
      `the discovery document names issuer ${JSON.stringify(doc['issuer'])}, not the configured ${JSON.stringify(issuerURL)}`,
      url,
      'set issuerURL to exactly the issuer the provider reports (scheme, host, port, path and trailing slash all count)',
    );
  }
  for (const name of ['token_endpoint', 'jwks_uri'] as const) {
    const value = doc[name];
    if (typeof value !== 'string' || !value.startsWith('https://')) {
      throw error('ERR_OIDC_DISCOVERY', `the discovery document has no https ${name}`, url);
    }
  }
  // The optional endpoints get client credentials and device codes (device flow) or the person's login (browser).
  for (const name of ['authorization_endpoint', 'device_authorization_endpoint'] as const) {
    const value = doc[name];
    if (typeof value === 'string' && !value.startsWith('https://')) {
      throw error('ERR_OIDC_DISCOVERY', `the discovery document's ${name} is not https`, url);
    }
  }
  const optional = (name: string): string | undefined =>
    typeof doc[name] === 'string' ? (doc[name] as string) : undefined;
  const strings = (value: unknown): string[] | undefined =>
    Array.isArray(value) ? value.filter((m): m is string => typeof m === 'string') : undefined;
  const methods = doc['code_challenge_methods_supported'];
  const authMethods = strings(doc['token_endpoint_auth_methods_supported']);
  return {
    issuer: issuerURL,
    token_endpoint: doc['token_endpoint'] as string,
    jwks_uri: doc['jwks_uri'] as string,
    ...(optional('authorization_endpoint') === undefined
      ? {}
      : { authorization_endpoint: optional('authorization_endpoint')! }),
    ...(optional('device_authorization_endpoint') === undefined
      ? {}
      : { device_authorization_endpoint: optional('device_authorization_endpoint')! }),
    ...(Array.isArray(methods) ? { code_challenge_methods_supported: strings(methods)! } : {}),
    ...(authMethods === undefined ? {} : { token_endpoint_auth_methods_supported: authMethods }),
  };
}

export function jwksRequest(metadata: ProviderMetadata): HttpRequest {
  return { method: 'GET', url: metadata.jwks_uri, headers: { accept: 'application/jwk-set+json, application/json' } };
}

/** The issuer's JSON Web Key Set (`keys` array). */
export function processJwksResponse(
  metadata: ProviderMetadata,
  response: HttpResponse,
): { keys: Record<string, unknown>[] } {
  if (response.status !== 200)
    throw error('ERR_OIDC_DISCOVERY', `the issuer's JWKS answered HTTP ${response.status}`, metadata.jwks_uri);
  const doc = parseJsonObject(response, 'the JWKS', metadata.jwks_uri, 'ERR_OIDC_DISCOVERY');
  if (!Array.isArray(doc['keys'])) throw error('ERR_OIDC_DISCOVERY', 'the JWKS has no keys array', metadata.jwks_uri);
  return { keys: doc['keys'] as Record<string, unknown>[] };
}

// ------------------------------------------------------------------------------------------------ token endpoint

/** Client authentication as it lands in a request: extra headers and/or form parameters (RFC 6749 §2.3). */
export interface ClientAuthentication {
  headers: Record<string, string>;
  params: Record<string, string>;
}

/** RFC 8707 `resource` when the audience is an absolute URI, else the RFC 8693 / vendor `audience` parameter. */
export function audienceParams(audience: string | undefined): Record<string, string | undefined> {
  if (audience === undefined) return {};
  return URL.canParse(audience) ? { resource: audience } : { audience };
}

/**
 * A token-endpoint POST for any grant: the grant's parameters, the configured extra parameters (`tokenParams`, e.g.
 * Dex's `connector_id`; settings refuse names the plugin sets itself) and client authentication.
 */
export function tokenRequest(
  metadata: ProviderMetadata,
  grantParams: Record<string, string | undefined>,
  auth: ClientAuthentication,
  extraParams: Record<string, string> = {},
): HttpRequest {
  return {
    method: 'POST',
    url: metadata.token_endpoint,
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...auth.headers },
    body: form({ ...grantParams, ...extraParams, ...auth.params }),
  };
}

export const clientCredentialsParams = (o: {
  scopes: string[];
  audience: string | undefined;
}): Record<string, string | undefined> => ({
  grant_type: 'client_credentials',
  scope: o.scopes.length > 0 ? o.scopes.join(' ') : undefined,
  ...audienceParams(o.audience),
});

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code';

export const tokenExchangeParams = (o: {
  subjectToken: string;
  subjectTokenType: string;
  scopes: string[];
  audience: string | undefined;
}): Record<string, string | undefined> => ({
  grant_type: TOKEN_EXCHANGE,
  subject_token: o.subjectToken,
  subject_token_type: o.subjectTokenType,
  requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
  scope: o.scopes.length > 0 ? o.scopes.join(' ') : undefined,
  ...audienceParams(o.audience),
});

export const refreshTokenParams = (o: { refreshToken: string }): Record<string, string | undefined> => ({
  grant_type: 'refresh_token',
  refresh_token: o.refreshToken,
});

export const deviceCodeParams = (o: { deviceCode: string }): Record<string, string | undefined> => ({
  grant_type: DEVICE_CODE,
  device_code: o.deviceCode,
});

export const authorizationCodeParams = (o: {
  code: string;
  redirectUri: string;
  codeVerifier: string;
}): Record<string, string | undefined> => ({
  grant_type: 'authorization_code',
  code: o.code,
  redirect_uri: o.redirectUri,
  code_verifier: o.codeVerifier,
});

/** An OAuth error response (RFC 6749 §5.2), kept as data for the caller to decide (e.g. `authorization_pending`). */
export class OAuthErrorResponse extends Error {
  override readonly name = 'OAuthErrorResponse';
  constructor(
    readonly error: string,
    readonly description: string | undefined,
    readonly status: number,
  ) {
    super(description === undefined ? error : `${error}: ${description}`);
  }
}

/** The RFC 6749 §5.2 error of a response (any status), if its body is one. */
export function oauthErrorOf(response: HttpResponse): OAuthErrorResponse | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(response.body);
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null || typeof (doc as Record<string, unknown>)['error'] !== 'string')
    return undefined;
  const description = (doc as Record<string, unknown>)['error_description'];
  return new OAuthErrorResponse(
    (doc as Record<string, string>)['error']!,
    typeof description === 'string' && description !== '' ? description : undefined,
    response.status,
  );
}

/**
 * A token response: 200 with `access_token` and `token_type`, or an RFC 6749 §5.2 error thrown as
 * {@link OAuthErrorResponse} (the caller knows what `invalid_grant` means for its grant). Anything else is
 * `ERR_OIDC_GRANT`.
 */
export function processTokenResponse(metadata: ProviderMetadata, response: HttpResponse): TokenResponse {
  const url = metadata.token_endpoint;
  if (response.status === 400 || response.status === 401 || response.status === 403) {
    let doc: Record<string, unknown> | undefined;
    try {
      doc = parseJsonObject(response, 'the token error response', url, 'ERR_OIDC_GRANT');
    } catch {
      doc = undefined;
    }
    if (typeof doc?.['error'] === 'string') {
      throw new OAuthErrorResponse(
        doc['error'],
        typeof doc['error_description'] === 'string' ? doc['error_description'] : undefined,
        response.status,
      );
    }
  }
  if (response.status !== 200) {
    const failure = oauthErrorOf(response);
    throw error(
      'ERR_OIDC_GRANT',
      `the token endpoint answered HTTP ${response.status}${failure === undefined ? '' : ` (${failure.message})`}`,
      url,
      response.status >= 500
        ? 'the issuer failed to answer: its log says why (Dex fails with server_error when a scope audience:server:client_id:<peer> names a peer whose trustedPeers does not list this client)'
        : undefined,
    );
  }
  const doc = parseJsonObject(response, 'the token response', url, 'ERR_OIDC_GRANT');
  if (typeof doc['access_token'] !== 'string' || doc['access_token'] === '' || typeof doc['token_type'] !== 'string') {
    throw error('ERR_OIDC_GRANT', 'the token response has no access_token or token_type', url);
  }
  const str = (name: string): string | undefined =>
    typeof doc[name] === 'string' && doc[name] !== '' ? (doc[name] as string) : undefined;
  const expiresIn =
    typeof doc['expires_in'] === 'number'
      ? doc['expires_in']
      : typeof doc['expires_in'] === 'string'
        ? Number(doc['expires_in'])
        : undefined;
  const result: TokenResponse = { access_token: doc['access_token'], token_type: doc['token_type'] };
  if (expiresIn !== undefined && Number.isFinite(expiresIn)) result.expires_in = expiresIn;
  for (const name of ['refresh_token', 'id_token', 'scope', 'issued_token_type'] as const) {
    const value = str(name);
    if (value !== undefined) result[name] = value;
  }
  return result;
}

/** Turns an OAuth error from a grant into a CredentialsError with the OP's own words, and a hint for every error. */
export function grantError(grant: string, metadata: ProviderMetadata, cause: OAuthErrorResponse): CredentialsError {
  const exchange = grant === 'token_exchange';
  const hints: Record<string, string> = {
    invalid_client:
      'check the client ID and its credential (--client-secret-file / --private-key-file) and --client-auth',
    unauthorized_client: 'the client is not allowed this grant type at the issuer',
    invalid_scope:
      "check scopes in spec.cluster.config (Dex: a scope audience:server:client_id:<peer> needs this client in that peer's trustedPeers)",
    invalid_target: 'check audience in spec.cluster.config: the issuer does not know that resource',
    invalid_grant: exchange
      ? 'the issuer rejected the subject token: check --subject-token-file and the trust configured at the issuer'
      : 'the grant is no longer valid: log in again',
    // Dex: the connector named by connector_id could not verify the subject token (no description is given).
    access_denied: exchange
      ? "the issuer did not accept the subject token (Dex answers access_denied when the connector named by connector_id cannot verify it): check that the token is unexpired and signed by the issuer that connector trusts; the issuer's log says why"
      : 'the issuer denied the request: its log says why',
    invalid_request: exchange
      ? 'the issuer refused the exchange request: Dex needs tokenParams {connector_id: <connector that trusts the subject token>} (or --token-param connector_id=…) and subjectTokenType urn:ietf:params:oauth:token-type:id_token'
      : 'the issuer refused the request: check tokenParams and the client settings',
    request_not_supported: exchange
      ? 'set subjectTokenType in spec.cluster.config (or --subject-token-type) to a type the issuer accepts: Dex takes urn:ietf:params:oauth:token-type:id_token or …:access_token'
      : 'the issuer does not support this request',
    unsupported_grant_type: `the issuer does not offer the ${grant} grant (or not to this client): check its configuration, or choose another --grant`,
  };
  const hint = hints[cause.error] ?? "the issuer's documentation of this error, or its log, says why";
  return new CredentialsError(
    'ERR_OIDC_GRANT',
    `the issuer refused the ${grant} grant: ${cause.message}${cause.description === undefined ? ' (the issuer gave no error_description)' : ''}`,
    { path: metadata.token_endpoint, cause, hint },
  );
}

// ------------------------------------------------------------------------------------------------- device flow

/**
 * RFC 8628 §3.1 device authorization request. Client authentication as given: the caller chooses the method (Dex
 * reads the client only from the form body, see issue.ts).
 */
export function deviceAuthorizationRequest(
  metadata: ProviderMetadata,
  o: { scopes: string[]; audience: string | undefined },
  auth: ClientAuthentication,
): HttpRequest {
  if (metadata.device_authorization_endpoint === undefined) {
    throw error(
      'ERR_OIDC_DISCOVERY',
      'the issuer offers no device_authorization_endpoint',
      metadata.issuer,
      'use --grant authorization_code',
    );
  }
  return {
    method: 'POST',
    url: metadata.device_authorization_endpoint,
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...auth.headers },
    body: form({ scope: o.scopes.join(' '), ...audienceParams(o.audience), ...auth.params }),
  };
}

export function processDeviceAuthorizationResponse(
  metadata: ProviderMetadata,
  response: HttpResponse,
): DeviceAuthorization {
  const url = metadata.device_authorization_endpoint ?? metadata.issuer;
  if (response.status !== 200) {
    const doc = (() => {
      try {
        return parseJsonObject(response, 'the device authorization error', url, 'ERR_OIDC_LOGIN_FAILED');
      } catch {
        return undefined;
      }
    })();
    const detail =
      typeof doc?.['error'] === 'string'
        ? `: ${String(doc['error'])}${typeof doc['error_description'] === 'string' ? ` (${doc['error_description']})` : ''}`
        : '';
    throw error(
      'ERR_OIDC_LOGIN_FAILED',
      `the device authorization request failed with HTTP ${response.status}${detail}`,
      url,
      doc?.['error'] === 'invalid_client'
        ? 'check the client ID, its secret and --client-auth'
        : "check clientID and scopes in spec.cluster.config; the issuer's log says why",
    );
  }
  const doc = parseJsonObject(response, 'the device authorization response', url, 'ERR_OIDC_LOGIN_FAILED');
  for (const name of ['device_code', 'user_code', 'verification_uri'] as const) {
    if (typeof doc[name] !== 'string' || doc[name] === '')
      throw error('ERR_OIDC_LOGIN_FAILED', `the device authorization response has no ${name}`, url);
  }
  return {
    device_code: doc['device_code'] as string,
    user_code: doc['user_code'] as string,
    verification_uri: doc['verification_uri'] as string,
    ...(typeof doc['verification_uri_complete'] === 'string'
      ? { verification_uri_complete: doc['verification_uri_complete'] }
      : {}),
    expires_in: typeof doc['expires_in'] === 'number' ? doc['expires_in'] : 600,
    interval: typeof doc['interval'] === 'number' && doc['interval'] > 0 ? doc['interval'] : 5,
  };
}

// ------------------------------------------------------------------------------------- authorization code + PKCE

/** The authorization URL (RFC 6749 §4.1.1 + RFC 7636 §4.3, S256 only). */
export function authorizationUrl(
  metadata: ProviderMetadata,
  o: {
    clientID: string;
    redirectUri: string;
    scopes: string[];
    audience: string | undefined;
    state: string;
    nonce: string;
    codeChallenge: string;
  },
): string {
  if (metadata.authorization_endpoint === undefined) {
    throw error(
      'ERR_OIDC_DISCOVERY',
      'the issuer offers no authorization_endpoint',
      metadata.issuer,
      'use --grant device_code',
    );
  }
  if (
    metadata.code_challenge_methods_supported !== undefined &&
    !metadata.code_challenge_methods_supported.includes('S256')
  ) {
    throw error('ERR_OIDC_DISCOVERY', 'the issuer does not support PKCE with S256', metadata.issuer);
  }
  const url = new URL(metadata.authorization_endpoint);
  const params: Record<string, string | undefined> = {
    response_type: 'code',
    client_id: o.clientID,
    redirect_uri: o.redirectUri,
    scope: o.scopes.join(' '),
    state: o.state,
    nonce: o.nonce,
    code_challenge: o.codeChallenge,
    code_challenge_method: 'S256',
    // offline_access is only honoured with a consent prompt (OpenID Connect Core §11).
    ...(o.scopes.includes('offline_access') ? { prompt: 'consent' } : {}),
    ...audienceParams(o.audience),
  };
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

/** Compares a received `state` with ours in constant time (it is a secret bound to this login). */
export function isExpectedState(received: string | null, expected: string): boolean {
  if (received === null) return false;
  const a = Buffer.from(received);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The redirect back to the loopback listener: `code` if `state` matches, else `ERR_OIDC_LOGIN_FAILED`. */
export function processAuthorizationCallback(callback: URL, expectedState: string): string {
  const params = callback.searchParams;
  const state = params.get('state');
  if (params.get('error') !== null) {
    const description = params.get('error_description');
    throw error(
      'ERR_OIDC_LOGIN_FAILED',
      `the login failed: ${params.get('error')}${description === null ? '' : ` (${description})`}`,
      'redirect_uri',
    );
  }
  if (!isExpectedState(state, expectedState))
    throw error(
      'ERR_OIDC_LOGIN_FAILED',
      'the redirect carried a wrong state (another login, or a forged redirect)',
      'redirect_uri',
    );
  const code = params.get('code');
  if (code === null || code === '')
    throw error('ERR_OIDC_LOGIN_FAILED', 'the redirect carried no authorization code', 'redirect_uri');
  return code;
}
