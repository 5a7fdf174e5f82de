/**
 * The OIDC plugin's settings. Runs on every invocation (the cache-hit path included): only plain checks, no file,
 * network or JOSE work. Secrets, keys and subject tokens are read later, by `issue`, on a cache miss.
 *
 * - Cluster-specific, from `spec.cluster.config` (the ClusterProfile's `client.authentication.k8s.io/exec`
 *   extension): {@link OidcClusterConfig}, whose contract is schemas/oidc-config.schema.json. The checks here follow
 *   that schema by hand (the precompiled validators are a large module, and this runs on every cache hit); `issue`
 *   runs the schema itself on a miss ({@link assertOidcClusterConfig}), and a unit test holds the two together.
 * - Controller-side, from flags: `--grant`, `--client-secret-file`, `--client-auth`, `--private-key-file`,
 *   `--subject-token-file`, `--subject-token-type`, `--token-param`, … (see {@link oidcFlags}).
 */
import { CredentialsError, quote, quoteUrl } from '../../base/errors.js';
import type { Env } from '../../base/io.js';
import type { ExecCredentialInput, FlagValues } from '../../plugin/provider.js';

export const oidcFlags = {
  grant: {
    type: 'string',
    placeholder: 'GRANT',
    description:
      'client_credentials, token_exchange, device_code or authorization_code (default: token_exchange with --subject-token-file, client_credentials with a secret or key, else authorization_code)',
  },
  'client-id': {
    type: 'string',
    placeholder: 'ID',
    description: 'OAuth client ID (overrides spec.cluster.config.clientID)',
  },
  'client-secret-file': {
    type: 'string',
    placeholder: 'FILE',
    description: 'file holding the client secret (client_secret_basic or _post)',
  },
  'client-auth': {
    type: 'string',
    placeholder: 'METHOD',
    description:
      'client_secret_basic (default with a secret), client_secret_post, private_key_jwt (default with a key) or none',
  },
  'private-key-file': {
    type: 'string',
    placeholder: 'FILE',
    description: 'PKCS#8 PEM private key for private_key_jwt client authentication',
  },
  'private-key-alg': {
    type: 'string',
    placeholder: 'ALG',
    description: 'JWS algorithm of the client assertion (default: RS256 for RSA, ES256/ES384/ES512 for EC, EdDSA)',
  },
  'private-key-id': { type: 'string', placeholder: 'KID', description: '`kid` header of the client assertion' },
  'subject-token-file': {
    type: 'string',
    placeholder: 'FILE',
    description:
      'token_exchange: the subject token (e.g. a projected service-account token), re-read on every exchange',
  },
  'subject-token-type': {
    type: 'string',
    placeholder: 'URN',
    description:
      'token_exchange: subject_token_type (overrides subjectTokenType; default urn:ietf:params:oauth:token-type:jwt; Dex: …:id_token)',
  },
  'token-param': {
    type: 'string',
    multiple: true,
    placeholder: 'NAME=VALUE',
    description:
      'an extra form parameter of every token request, e.g. connector_id=kubernetes for Dex (overrides the same name in tokenParams)',
  },
  'open-browser': {
    type: 'boolean',
    description:
      'open the login (authorization_code) or verification (device_code) URL in a browser (default: only print it on stderr)',
  },
  'redirect-port': {
    type: 'string',
    placeholder: 'PORT',
    description: 'authorization_code: loopback port of the redirect URI (default: any free port)',
  },
  'login-timeout': {
    type: 'string',
    placeholder: 'SECONDS',
    description:
      "how long an interactive login may take (default: device_code the issuer's expires_in, authorization_code 300)",
  },
  timeout: {
    type: 'string',
    placeholder: 'SECONDS',
    description: 'deadline of each request to the issuer, connect and TLS included (default 30)',
  },
} as const;

export type OidcFlags = typeof oidcFlags;

export const GRANTS = ['client_credentials', 'token_exchange', 'device_code', 'authorization_code'] as const;
export type Grant = (typeof GRANTS)[number];
export const INTERACTIVE_GRANTS: readonly Grant[] = ['device_code', 'authorization_code'];

export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'] as const;
export type ClientAuthMethod = (typeof CLIENT_AUTH_METHODS)[number];

/** Asymmetric JWS algorithms only: `none` and HS* can never be allowed (no shared secret with an issuer). */
export const ASYMMETRIC_ALGORITHMS = [
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
] as const;

export type TokenKind = 'id_token' | 'access_token';

/** RFC 8693 §3: a JWT, and what the plugin sends unless told otherwise. */
export const DEFAULT_SUBJECT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';

/** The `--login-timeout` of the authorization code flow when none is given (device code: the OP's `expires_in`). */
export const DEFAULT_LOGIN_TIMEOUT_MS = 300_000;

/**
 * Form parameters the plugin sets itself: `tokenParams` / `--token-param` cannot name them (a typo must not replace a
 * grant's own parameter, or send a second client credential).
 */
export const RESERVED_TOKEN_PARAMS: readonly string[] = [
  'grant_type',
  'client_id',
  'client_secret',
  'client_assertion',
  'client_assertion_type',
  'scope',
  'audience',
  'resource',
  'subject_token',
  'subject_token_type',
  'actor_token',
  'actor_token_type',
  'requested_token_type',
  'refresh_token',
  'code',
  'code_verifier',
  'redirect_uri',
  'device_code',
  'username',
  'password',
];

/** A parameter name: what a form field name of an OAuth request looks like (RFC 6749 Appendix A: VSCHAR less `=`/`&`). */
const PARAM_NAME = /^[A-Za-z0-9_.:-]+$/;

/**
 * `spec.cluster.config` of the oidc plugin: the ClusterProfile's `client.authentication.k8s.io/exec` extension.
 * Schema: schemas/oidc-config.schema.json (the same keys; `null` counts as absent; unknown keys are ignored).
 */
export interface OidcClusterConfig {
  /** The issuer identifier, https, no query or fragment; discovery must report exactly this string. */
  issuerURL: string;
  /** The OAuth client (`--client-id` overrides it). */
  clientID?: string | null;
  /** The audience the access token must carry (RFC 8707 `resource` when an absolute URI, else `audience`). */
  audience?: string | null;
  /** Alias of `audience`. */
  resource?: string | null;
  /** Extra scopes: a list, or one space- or comma-separated string. */
  scopes?: string | string[] | null;
  /** Which token to return. */
  token?: 'id_token' | 'access_token' | null;
  /** Base64 of the PEM CA bundle trusted for the issuer. */
  issuerCA?: string | null;
  /** JWS algorithms accepted for the tokens (asymmetric only). */
  signingAlgorithms?: string[] | null;
  /** Token exchange: `subject_token_type` (a URI); `--subject-token-type` overrides it. */
  subjectTokenType?: string | null;
  /** Extra form parameters of every token request (Dex: `connector_id`); `--token-param` overrides a name. */
  tokenParams?: Record<string, string> | null;
}

export interface OidcSettings {
  /** `spec.cluster.config` as received, for the schema check on a cache miss ({@link assertOidcClusterConfig}). */
  clusterConfig: Record<string, unknown>;
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
  /** Whether `--client-auth` was given: else the method is chosen from the issuer's discovery document. */
  clientAuthGiven: boolean;
  subjectTokenFile: string | undefined;
  subjectTokenType: string;
  /** Extra form parameters of every token-endpoint request: `tokenParams` with `--token-param` on top. */
  tokenParams: Record<string, string>;
  openBrowser: boolean;
  redirectPort: number;
  /** `--login-timeout` in ms; undefined: the device code's `expires_in`, or {@link DEFAULT_LOGIN_TIMEOUT_MS}. */
  loginTimeoutMs: number | undefined;
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
  if (typeof value !== 'string' || value === '')
    throw configError(`${key} must be a non-empty string`, `${CONFIG}.${key}`);
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
    throw configError(
      'issuerURL is missing',
      `${CONFIG}.issuerURL`,
      "set issuerURL in the cluster's client.authentication.k8s.io/exec extension and provideClusterInfo: true",
    );
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw configError(`issuerURL ${quoteUrl(value)} is not a URL`, `${CONFIG}.issuerURL`);
  }
  if (url.protocol !== 'https:')
    throw configError(`issuerURL must use https, got ${url.protocol}`, `${CONFIG}.issuerURL`);
  if (url.search !== '' || url.hash !== '')
    throw configError('issuerURL must not have a query or fragment', `${CONFIG}.issuerURL`);
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
    throw configError(
      'signingAlgorithms must be a non-empty list of JWS algorithm names',
      `${CONFIG}.signingAlgorithms`,
    );
  }
  for (const alg of value as string[]) {
    if (!(ASYMMETRIC_ALGORITHMS as readonly string[]).includes(alg)) {
      throw configError(
        `signing algorithm ${quote(alg)} is not allowed: only ${ASYMMETRIC_ALGORITHMS.join(', ')}`,
        `${CONFIG}.signingAlgorithms`,
        "`none` and HMAC algorithms (HS256…) are refused: an ID token must be signed with the issuer's private key",
      );
    }
  }
  return value as string[];
}

function parseSubjectTokenType(config: Record<string, unknown>, flag: string | undefined): string {
  const fromFlag = flag !== undefined;
  const value = flag ?? optionalString(config, 'subjectTokenType');
  if (value === undefined) return DEFAULT_SUBJECT_TOKEN_TYPE;
  // RFC 8693 §3: an absolute URI (in practice a URN such as urn:ietf:params:oauth:token-type:id_token).
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(value)) {
    throw configError(
      `subject token type ${quote(value)} is not a URI`,
      fromFlag ? '--subject-token-type' : `${CONFIG}.subjectTokenType`,
      'e.g. urn:ietf:params:oauth:token-type:jwt, or urn:ietf:params:oauth:token-type:id_token for Dex',
    );
  }
  return value;
}

function checkParamName(name: string, path: string): void {
  if (!PARAM_NAME.test(name)) throw configError(`token parameter name ${quote(name)} is not a form field name`, path);
  if (RESERVED_TOKEN_PARAMS.includes(name)) {
    throw configError(
      `the token parameter ${name} is set by the plugin itself`,
      path,
      'scopes, audience, subjectTokenType and the client flags set these; tokenParams is for what an issuer adds, e.g. connector_id',
    );
  }
}

/** `tokenParams` of the config, then each `--token-param NAME=VALUE` (a flag overrides the same name). */
function parseTokenParams(config: Record<string, unknown>, flags: readonly string[]): Record<string, string> {
  const params: Record<string, string> = {};
  const raw = config['tokenParams'];
  if (raw !== undefined && raw !== null) {
    if (typeof raw !== 'object' || Array.isArray(raw))
      throw configError(
        'tokenParams must be an object of form parameters',
        `${CONFIG}.tokenParams`,
        'e.g. tokenParams: {connector_id: kubernetes}',
      );
    for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
      const path = `${CONFIG}.tokenParams${/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`}`;
      checkParamName(name, path);
      if (typeof value !== 'string' || value === '')
        throw configError(`tokenParams.${name} must be a non-empty string`, path);
      params[name] = value;
    }
  }
  for (const entry of flags) {
    const eq = entry.indexOf('=');
    // The entry is not quoted back: its value may be a credential.
    if (eq <= 0 || eq === entry.length - 1)
      throw configError(
        'a --token-param is not NAME=VALUE (a name, =, a non-empty value)',
        '--token-param',
        'e.g. --token-param connector_id=kubernetes',
      );
    const name = entry.slice(0, eq);
    checkParamName(name, '--token-param');
    params[name] = entry.slice(eq + 1);
  }
  return params;
}

function positiveInt(value: string | undefined, flag: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) > max)
    throw configError(`--${flag} must be an integer from 0 to ${max}`, `--${flag}`);
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
export function parseOidcSettings(
  input: ExecCredentialInput,
  flags: FlagValues<OidcFlags>,
  env: Env = {},
): OidcSettings {
  const raw = input.spec.cluster?.config;
  if (raw === undefined || raw === null) {
    throw configError(
      'no OIDC settings: spec.cluster.config is missing',
      CONFIG,
      'set provideClusterInfo: true and the cluster extension client.authentication.k8s.io/exec with issuerURL and clientID',
    );
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) throw configError('spec.cluster.config must be an object', CONFIG);
  const config = raw as Record<string, unknown>;

  const issuerURL = parseIssuerURL(optionalString(config, 'issuerURL'));
  const clientID = flags['client-id'] ?? optionalString(config, 'clientID');
  if (clientID === undefined)
    throw configError('clientID is missing', `${CONFIG}.clientID`, 'set clientID in the config or pass --client-id');
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
    (flags['subject-token-file'] !== undefined
      ? 'token_exchange'
      : hasClientCredential
        ? 'client_credentials'
        : 'authorization_code');

  const authFlag = flags['client-auth'];
  if (authFlag !== undefined && !(CLIENT_AUTH_METHODS as readonly string[]).includes(authFlag)) {
    throw configError(
      `unknown --client-auth ${quote(authFlag)}: expected ${CLIENT_AUTH_METHODS.join(', ')}`,
      '--client-auth',
    );
  }
  const clientAuth: ClientAuthMethod =
    (authFlag as ClientAuthMethod | undefined) ??
    (flags['private-key-file'] !== undefined
      ? 'private_key_jwt'
      : flags['client-secret-file'] !== undefined
        ? 'client_secret_basic'
        : 'none');
  if (
    (clientAuth === 'client_secret_basic' || clientAuth === 'client_secret_post') &&
    flags['client-secret-file'] === undefined
  ) {
    throw configError(`--client-auth ${clientAuth} needs --client-secret-file`, '--client-secret-file');
  }
  if (clientAuth === 'private_key_jwt' && flags['private-key-file'] === undefined) {
    throw configError('--client-auth private_key_jwt needs --private-key-file', '--private-key-file');
  }
  if (grant === 'client_credentials' && clientAuth === 'none') {
    throw configError(
      'the client_credentials grant needs client authentication',
      '--client-secret-file',
      'pass --client-secret-file or --private-key-file (private_key_jwt)',
    );
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
  const subjectTokenType = parseSubjectTokenType(config, flags['subject-token-type']);
  const tokenParams = parseTokenParams(config, flags['token-param']);
  let scopes = parseScopes(config['scopes']);
  if (interactiveGrant) {
    // openid for the ID token, offline_access for a refresh token (so the next run needs no login).
    scopes = [...new Set(['openid', ...scopes, 'offline_access'])];
  }

  return {
    clusterConfig: config,
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
    clientAuthGiven: authFlag !== undefined,
    subjectTokenFile: flags['subject-token-file'],
    subjectTokenType,
    tokenParams,
    openBrowser: flags['open-browser'],
    redirectPort: positiveInt(flags['redirect-port'], 'redirect-port', 0, 65535),
    loginTimeoutMs:
      flags['login-timeout'] === undefined
        ? undefined
        : positiveInt(flags['login-timeout'], 'login-timeout', 0, 86_400) * 1000,
    timeoutMs: parseTimeout(flags.timeout),
    interactive: input.spec.interactive === true,
    proxy: parseProxy(env),
  };
}

/**
 * The authoritative check of `spec.cluster.config` against schemas/oidc-config.schema.json, on a cache miss only
 * (the validators are a large module; the hand checks of {@link parseOidcSettings} follow the same rules on every
 * run). Throws `ERR_OIDC_CONFIG` with the JSON path of the first problem.
 */
export async function assertOidcClusterConfig(config: Record<string, unknown>): Promise<void> {
  const issues = (await import('./config-schema.js')).oidcConfigIssues(config);
  const first = issues[0];
  if (first === undefined) return;
  throw configError(
    `spec.cluster.config is invalid: ${issues
      .slice(0, 3)
      .map((issue) => `${CONFIG}${issue.path.slice(1)}: ${issue.message}`)
      .join('; ')}`,
    `${CONFIG}${first.path.slice(1)}`,
    'the keys and their types: docs/reference/plugins.md, "Cluster settings"',
  );
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
      throw configError(
        `HTTPS_PROXY ${quoteUrl(httpsProxy)} is not an http(s) URL`,
        'HTTPS_PROXY',
        'e.g. HTTPS_PROXY=http://proxy.example:3128',
      );
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
    // Only when set, so the keys of entries written before tokenParams existed stay the same.
    ...(Object.keys(settings.tokenParams).length === 0
      ? {}
      : { tokenParams: Object.entries(settings.tokenParams).sort(([a], [b]) => (a < b ? -1 : 1)) }),
  };
}
