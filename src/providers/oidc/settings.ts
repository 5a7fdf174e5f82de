/**
 * The OIDC plugin's settings. Runs on every invocation (the cache-hit path included): only plain checks, no file,
 * network or JOSE work. Secrets, keys and subject tokens are read later, by `issue`, on a cache miss.
 *
 * - Cluster-specific, from `spec.cluster.config` (the ClusterProfile's `client.authentication.k8s.io/exec`
 *   extension): `issuerURL`, `clientID`, `audience`, `scopes`, `token`, `issuerCA`, `signingAlgorithms`.
 * - Controller-side, from flags: `--grant`, `--client-secret-file`, `--client-auth`, `--private-key-file`,
 *   `--subject-token-file`, … (see {@link oidcFlags}).
 */
import { CredentialsError, quote, quoteUrl } from '../../core/errors.js';
import type { Env } from '../../core/io.js';
import type { ExecCredentialInput, FlagValues } from '../../plugin/provider.js';

export const oidcFlags = {
  grant: {
    type: 'string',
    placeholder: 'GRANT',
    description:
      'client_credentials, token_exchange, device_code or authorization_code (default: token_exchange with --subject-token-file, client_credentials with a secret or key, else authorization_code)',
  },
  'client-id': { type: 'string', placeholder: 'ID', description: 'OAuth client ID (overrides spec.cluster.config.clientID)' },
  'client-secret-file': { type: 'string', placeholder: 'FILE', description: 'file holding the client secret (client_secret_basic or _post)' },
  'client-auth': {
    type: 'string',
    placeholder: 'METHOD',
    description: 'client_secret_basic (default with a secret), client_secret_post, private_key_jwt (default with a key) or none',
  },
  'private-key-file': { type: 'string', placeholder: 'FILE', description: 'PKCS#8 PEM private key for private_key_jwt client authentication' },
  'private-key-alg': { type: 'string', placeholder: 'ALG', description: 'JWS algorithm of the client assertion (default: RS256 for RSA, ES256/ES384/ES512 for EC, EdDSA)' },
  'private-key-id': { type: 'string', placeholder: 'KID', description: '`kid` header of the client assertion' },
  'subject-token-file': { type: 'string', placeholder: 'FILE', description: 'token_exchange: the subject token (e.g. a projected service-account token), re-read on every exchange' },
  'subject-token-type': { type: 'string', placeholder: 'URN', description: 'token_exchange: subject_token_type (default urn:ietf:params:oauth:token-type:jwt)' },
  'open-browser': { type: 'boolean', description: 'open the login (authorization_code) or verification (device_code) URL in a browser (default: only print it on stderr)' },
  'redirect-port': { type: 'string', placeholder: 'PORT', description: 'authorization_code: loopback port of the redirect URI (default: any free port)' },
  'login-timeout': { type: 'string', placeholder: 'SECONDS', description: 'how long an interactive login may take (default 300)' },
  timeout: { type: 'string', placeholder: 'SECONDS', description: 'deadline of each request to the issuer, connect and TLS included (default 30)' },
} as const;

export type OidcFlags = typeof oidcFlags;

export const GRANTS = ['client_credentials', 'token_exchange', 'device_code', 'authorization_code'] as const;
export type Grant = (typeof GRANTS)[number];
export const INTERACTIVE_GRANTS: readonly Grant[] = ['device_code', 'authorization_code'];

export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'] as const;
export type ClientAuthMethod = (typeof CLIENT_AUTH_METHODS)[number];

/** Asymmetric JWS algorithms only: `none` and HS* can never be allowed (no shared secret with an issuer). */
export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;

export type TokenKind = 'id_token' | 'access_token';

export interface OidcSettings {
  /** Exactly as configured (no trailing-slash normalisation: discovery must echo it byte for byte). */
  issuerURL: string;
  clientID: string;
  /** Resource indicator (RFC 8707) / audience the access token must carry. */
  audience: string | undefined;
  scopes: string[];
  token: TokenKind;
  /** PEM of the CA bundle trusted for the issuer (else the system roots). */
  issuerCA: string | undefined;
  signingAlgorithms: string[];
  grant: Grant;
  clientAuth: ClientAuthMethod;
  clientSecretFile: string | undefined;
  privateKeyFile: string | undefined;
  privateKeyAlg: string | undefined;
  privateKeyId: string | undefined;
  subjectTokenFile: string | undefined;
  subjectTokenType: string;
  openBrowser: boolean;
  redirectPort: number;
  loginTimeoutMs: number;
  /** Deadline of each request to the issuer (ms). */
  timeoutMs: number;
  interactive: boolean;
  /** HTTPS_PROXY / NO_PROXY from the plugin's environment (Go plugins honour them too); not part of the identity. */
  proxy: { httpsProxy: string | undefined; noProxy: string | undefined };
}

const CONFIG = '$.spec.cluster.config';

function configError(message: string, path: string, hint?: string): CredentialsError {
  return new CredentialsError('ERR_OIDC_CONFIG', message, { path, ...(hint === undefined ? {} : { hint }) });
}

function optionalString(config: Record<string, unknown>, key: string): string | undefined {
  const value = config[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') throw configError(`${key} must be a non-empty string`, `${CONFIG}.${key}`);
  return value;
}

function parseScopes(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const list = typeof value === 'string' ? value.split(/[\s,]+/) : value;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) {
    throw configError('scopes must be a list of strings (or one space-separated string)', `${CONFIG}.scopes`);
  }
  return [...new Set((list as string[]).filter((s) => s !== ''))];
}

function parseIssuerURL(value: string | undefined): string {
  if (value === undefined) {
    throw configError('issuerURL is missing', `${CONFIG}.issuerURL`, 'set issuerURL in the cluster\'s client.authentication.k8s.io/exec extension and provideClusterInfo: true');
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw configError(`issuerURL ${quoteUrl(value)} is not a URL`, `${CONFIG}.issuerURL`);
  }
  if (url.protocol !== 'https:') throw configError(`issuerURL must use https, got ${url.protocol}`, `${CONFIG}.issuerURL`);
  if (url.search !== '' || url.hash !== '') throw configError('issuerURL must not have a query or fragment', `${CONFIG}.issuerURL`);
  return value;
}

function parseCA(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const pem = Buffer.from(value, 'base64').toString('utf8');
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw configError('issuerCA must be base64 of a PEM certificate bundle', `${CONFIG}.issuerCA`, 'base64 -w0 ca.crt');
  }
  return pem;
}

function parseAlgorithms(value: unknown): string[] {
  if (value === undefined || value === null) return [...ASYMMETRIC_ALGORITHMS];
  if (!Array.isArray(value) || value.length === 0 || !value.every((v) => typeof v === 'string')) {
    throw configError('signingAlgorithms must be a non-empty list of JWS algorithm names', `${CONFIG}.signingAlgorithms`);
  }
  for (const alg of value as string[]) {
    if (!(ASYMMETRIC_ALGORITHMS as readonly string[]).includes(alg)) {
      throw configError(
        `signing algorithm ${quote(alg)} is not allowed: only ${ASYMMETRIC_ALGORITHMS.join(', ')}`,
        `${CONFIG}.signingAlgorithms`,
        '`none` and HMAC algorithms (HS256…) are refused: an ID token must be signed with the issuer\'s private key',
      );
    }
  }
  return value as string[];
}

function positiveInt(value: string | undefined, flag: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) > max) throw configError(`--${flag} must be an integer from 0 to ${max}`, `--${flag}`);
  return Number(value);
}

/** `--timeout` in seconds, (0, 600]; default 30. */
function parseTimeout(value: string | undefined): number {
  if (value === undefined) return 30_000;
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0 || seconds > 600) {
    throw configError(`--timeout ${quote(value)} is not a number of seconds in (0, 600]`, '--timeout');
  }
  return Math.round(seconds * 1000);
}

/**
 * Settings from `spec.cluster.config` and flags, validated. Throws `ERR_OIDC_CONFIG` naming the field or flag.
 *
 * @example
 * ```ts
 * parseOidcSettings(input, flags); // { issuerURL: 'https://op.example', grant: 'client_credentials', … }
 * ```
 */
export function parseOidcSettings(input: ExecCredentialInput, flags: FlagValues<OidcFlags>, env: Env = {}): OidcSettings {
  const raw = input.spec.cluster?.config;
  if (raw === undefined || raw === null) {
    throw configError('no OIDC settings: spec.cluster.config is missing', CONFIG, 'set provideClusterInfo: true and the cluster extension client.authentication.k8s.io/exec with issuerURL and clientID');
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) throw configError('spec.cluster.config must be an object', CONFIG);
  const config = raw as Record<string, unknown>;

  const issuerURL = parseIssuerURL(optionalString(config, 'issuerURL'));
  const clientID = flags['client-id'] ?? optionalString(config, 'clientID');
  if (clientID === undefined) throw configError('clientID is missing', `${CONFIG}.clientID`, 'set clientID in the config or pass --client-id');
  const audience = optionalString(config, 'audience') ?? optionalString(config, 'resource');
  const issuerCA = parseCA(optionalString(config, 'issuerCA'));
  const signingAlgorithms = parseAlgorithms(config['signingAlgorithms']);

  const grantFlag = flags.grant;
  if (grantFlag !== undefined && !(GRANTS as readonly string[]).includes(grantFlag)) {
    throw configError(`unknown --grant ${quote(grantFlag)}: expected ${GRANTS.join(', ')}`, '--grant');
  }
  const hasClientCredential = flags['client-secret-file'] !== undefined || flags['private-key-file'] !== undefined;
  const grant: Grant =
    (grantFlag as Grant | undefined) ??
    (flags['subject-token-file'] !== undefined ? 'token_exchange' : hasClientCredential ? 'client_credentials' : 'authorization_code');

  const authFlag = flags['client-auth'];
  if (authFlag !== undefined && !(CLIENT_AUTH_METHODS as readonly string[]).includes(authFlag)) {
    throw configError(`unknown --client-auth ${quote(authFlag)}: expected ${CLIENT_AUTH_METHODS.join(', ')}`, '--client-auth');
  }
  const clientAuth: ClientAuthMethod =
    (authFlag as ClientAuthMethod | undefined) ??
    (flags['private-key-file'] !== undefined ? 'private_key_jwt' : flags['client-secret-file'] !== undefined ? 'client_secret_basic' : 'none');
  if ((clientAuth === 'client_secret_basic' || clientAuth === 'client_secret_post') && flags['client-secret-file'] === undefined) {
    throw configError(`--client-auth ${clientAuth} needs --client-secret-file`, '--client-secret-file');
  }
  if (clientAuth === 'private_key_jwt' && flags['private-key-file'] === undefined) {
    throw configError('--client-auth private_key_jwt needs --private-key-file', '--private-key-file');
  }
  if (grant === 'client_credentials' && clientAuth === 'none') {
    throw configError('the client_credentials grant needs client authentication', '--client-secret-file', 'pass --client-secret-file or --private-key-file (private_key_jwt)');
  }
  if (grant === 'token_exchange' && flags['subject-token-file'] === undefined) {
    throw configError('the token_exchange grant needs --subject-token-file', '--subject-token-file');
  }

  const tokenValue = optionalString(config, 'token');
  if (tokenValue !== undefined && tokenValue !== 'id_token' && tokenValue !== 'access_token') {
    throw configError(`token must be id_token or access_token, got ${quote(tokenValue)}`, `${CONFIG}.token`);
  }
  const interactiveGrant = INTERACTIVE_GRANTS.includes(grant);
  const token: TokenKind = (tokenValue as TokenKind | undefined) ?? (interactiveGrant ? 'id_token' : 'access_token');
  if (token === 'id_token' && !interactiveGrant) {
    throw configError(`the ${grant} grant returns no ID token: set token: access_token`, `${CONFIG}.token`);
  }
  if (token === 'access_token' && audience === undefined) {
    throw configError(
      'returning the access token needs an audience: the API server must be able to check the token is meant for it',
      `${CONFIG}.audience`,
    );
  }
  let scopes = parseScopes(config['scopes']);
  if (interactiveGrant) {
    // openid for the ID token, offline_access for a refresh token (so the next run needs no login).
    scopes = [...new Set(['openid', ...scopes, 'offline_access'])];
  }

  return {
    issuerURL,
    clientID,
    audience,
    scopes,
    token,
    issuerCA,
    signingAlgorithms,
    grant,
    clientAuth,
    clientSecretFile: flags['client-secret-file'],
    privateKeyFile: flags['private-key-file'],
    privateKeyAlg: flags['private-key-alg'],
    privateKeyId: flags['private-key-id'],
    subjectTokenFile: flags['subject-token-file'],
    subjectTokenType: flags['subject-token-type'] ?? 'urn:ietf:params:oauth:token-type:jwt',
    openBrowser: flags['open-browser'],
    redirectPort: positiveInt(flags['redirect-port'], 'redirect-port', 0, 65535),
    loginTimeoutMs: positiveInt(flags['login-timeout'], 'login-timeout', 300, 86_400) * 1000,
    timeoutMs: parseTimeout(flags.timeout),
    interactive: input.spec.interactive === true,
    proxy: parseProxy(env),
  };
}

/** The proxy for the issuer's https URL, from the environment as Go's ProxyFromEnvironment reads it. */
function parseProxy(env: Env): OidcSettings['proxy'] {
  const pick = (upper: string): string | undefined => {
    const value = env[upper] ?? env[upper.toLowerCase()];
    return value === undefined || value === '' ? undefined : value;
  };
  const httpsProxy = pick('HTTPS_PROXY');
  if (httpsProxy !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(httpsProxy);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw configError(`HTTPS_PROXY ${quoteUrl(httpsProxy)} is not an http(s) URL`, 'HTTPS_PROXY', 'e.g. HTTPS_PROXY=http://proxy.example:3128');
    }
  }
  return { httpsProxy, noProxy: pick('NO_PROXY') };
}

/** Every input that decides whose token this is (never a secret itself: files by path). */
export function oidcCacheKey(settings: OidcSettings): unknown {
  return {
    issuerURL: settings.issuerURL,
    clientID: settings.clientID,
    audience: settings.audience,
    scopes: settings.scopes,
    token: settings.token,
    issuerCA: settings.issuerCA,
    grant: INTERACTIVE_GRANTS.includes(settings.grant) ? 'interactive' : settings.grant,
    clientAuth: settings.clientAuth,
    clientSecretFile: settings.clientSecretFile,
    privateKeyFile: settings.privateKeyFile,
    subjectTokenFile: settings.subjectTokenFile,
    subjectTokenType: settings.subjectTokenType,
  };
}
