/**
 * A REAL OpenID Provider for tests: panva's certified `oidc-provider` (v9) on 127.0.0.1 over HTTPS, configured by the
 * test harness (docs/contributing.md, "The test OpenID Provider").
 *
 * What it offers (one client per capability, see {@link TestOpClients}):
 * - client_credentials with client_secret_basic, client_secret_post and private_key_jwt;
 * - the device authorization grant and authorization code + PKCE (S256 required) for a public native client with a
 *   loopback redirect (any port, RFC 8252), refresh tokens with rotation (`offline_access`);
 * - JWT access tokens (`typ: at+jwt`, RS256) whose `aud` is the resource indicator (default {@link DEFAULT_AUDIENCE});
 * - a `groups` claim in ID tokens and JWT access tokens;
 * - RFC 8693 token exchange registered with `registerGrantType`: the subject token must be a JWT signed by a key the
 *   harness controls ({@link TestOpenIdProvider.signSubjectToken}) or accepted by `verifySubjectToken`;
 * - helpers that act as the human: {@link TestOpenIdProvider.approveDeviceCode}, {@link TestOpenIdProvider.login}
 *   (follows the provider's own interaction pages with a cookie jar, then the redirect to the client's loopback);
 *   {@link approveDeviceCodeAt} / {@link loginAt} do the same from another process, given issuer and CA;
 * - observation: every token-endpoint outcome in `grants`, and `revokeRefreshTokens()`.
 *
 * @example
 * const op = await startTestOpenIdProvider();
 * // op.issuer = 'https://127.0.0.1:PORT', op.caPem trusts it
 * await op.close();
 */
import { randomBytes, webcrypto } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
// The project's ready-to-use @peculiar/x509 (crypto provider + the Reflect metadata subset tsyringe needs).
import { x509 } from '../../src/wire/tenant-cert/x509.js';
import { exportJWK, exportPKCS8, generateKeyPair, importJWK, jwtVerify, SignJWT, type JWK } from 'jose';
// oidc-provider ships no type declarations: the few shapes used here are declared locally.
import Provider, { errors } from 'oidc-provider';
import { Agent, fetch, type Dispatcher } from 'undici';

/** The resource indicator (and so the JWT access token `aud`) unless `audiences` says otherwise. */
export const DEFAULT_AUDIENCE = 'https://kubernetes.test';
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** The issuer of the harness's own subject tokens (what a projected service-account token would be). */
export const SUBJECT_TOKEN_ISSUER = 'https://subject-issuer.test';
/** The audience subject tokens must carry to be exchanged. */
export const SUBJECT_TOKEN_AUDIENCE = 'test-op-token-exchange';

export interface TestOpClients {
  /** client_credentials, client_secret_basic. Also allowed: token exchange. */
  basic: { clientId: string; clientSecret: string };
  /** client_credentials, client_secret_post. */
  post: { clientId: string; clientSecret: string };
  /** client_credentials + token exchange, private_key_jwt (RS256); the private key as PKCS#8 PEM. */
  privateKeyJwt: { clientId: string; privateKeyPem: string; kid: string };
  /** token exchange only, no client authentication at all (workload identity federation: no secret). */
  exchange: { clientId: string };
  /** public native client: authorization_code + PKCE, device_code, refresh_token; redirect http://127.0.0.1/callback. */
  cli: { clientId: string; redirectUri: string };
}

export interface TestOpAccount {
  groups?: string[];
  email?: string;
}

export interface TestOpOptions {
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** Serve this certificate instead of one from a fresh test CA; `ca` (default: `cert`) is returned as `caPem`. */
  certificate?: { cert: string; key: string; ca?: string };
  /** Resource indicators the OP issues JWT access tokens for; the first is the default resource. */
  audiences?: string[];
  /** Accounts by id; any login name works, unknown ones get `defaultGroups`. */
  accounts?: Record<string, TestOpAccount>;
  defaultGroups?: string[];
  /** Groups claim for the client_credentials / token-exchange tokens of client ids (default `['machines']`). */
  clientGroups?: Record<string, string[]>;
  /** Lifetimes in seconds. */
  accessTokenTTL?: number;
  idTokenTTL?: number;
  refreshTokenTTL?: number;
  /** Extra subject-token check for token exchange (e.g. a Kubernetes service-account token); return the subject. */
  verifySubjectToken?: (token: string) => Promise<{ sub: string } | undefined>;
  /** Seconds between device-code polls the OP asks for (default 1; RFC 8628's default of 5 slows tests). */
  deviceInterval?: number;
  /** Keep oidc-provider's development NOTICE/WARNING console lines (default: silenced). */
  verbose?: boolean;
  /** More clients, as oidc-provider client metadata (e.g. a confidential device-flow client). */
  extraClients?: Record<string, unknown>[];
}

export interface GrantEvent {
  grantType: string;
  clientId: string | undefined;
  outcome: 'success' | 'error';
  error?: string;
}

export interface TestOpenIdProvider {
  issuer: string;
  /** PEM of the CA that signed the serving certificate. */
  caPem: string;
  /** Base64 of `caPem`: what `issuerCA` in a cluster's exec config takes. */
  caBase64: string;
  clients: TestOpClients;
  /** The default audience (first of `audiences`). */
  audience: string;
  /** Every token-endpoint request, in order. */
  grants: GrantEvent[];
  /** A dispatcher trusting `caPem`, for test code that talks to the OP. */
  dispatcher: Dispatcher;
  /** The underlying oidc-provider instance (for tests that need more). */
  provider: OidcProvider;
  /** A subject token for token exchange, signed by the harness's key (iss {@link SUBJECT_TOKEN_ISSUER}). */
  signSubjectToken(claims?: SubjectTokenClaims): Promise<string>;
  /** The subject-token signing key as a private JWK (serializable): {@link signSubjectTokenWith} in another process. */
  subjectTokenKey: JWK;
  /** The human at the device-verification page: enter `userCode`, confirm, sign in as `login`, consent. */
  approveDeviceCode(userCode: string, options?: { login?: string }): Promise<void>;
  /** The human in the browser: open the authorization URL, sign in, consent, land on the redirect URI. */
  login(
    authorizationUrl: string,
    options?: { login?: string; abort?: boolean },
  ): Promise<{ status: number; body: string; redirectedTo: string }>;
  /** Revoke every refresh token issued so far (the next refresh fails with invalid_grant). */
  revokeRefreshTokens(): Promise<number>;
  close(): Promise<void>;
}

/* The oidc-provider API is untyped here (test/types/oidc-provider.d.ts): biome allows `any` under test/. */
type AdapterPayload = Record<string, any>;
type KoaContextWithOIDC = any;
type OidcProvider = any;

/** A fresh CA and a serving certificate for 127.0.0.1 (IP SAN) and localhost, ECDSA P-256. */
export async function createTestCertificate(): Promise<{ cert: string; key: string; ca: string }> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
  const notBefore = new Date(Date.now() - 5 * 60_000);
  const notAfter = new Date(Date.now() + 24 * 3600_000);
  const caKeys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name: 'CN=clusterprofile test OP CA',
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  const leafKeys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: randomBytes(8).toString('hex'),
    subject: 'CN=127.0.0.1',
    issuer: caCert.subject,
    notBefore,
    notAfter,
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'ip', value: '127.0.0.1' },
        { type: 'dns', value: 'localhost' },
      ]),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey)).toString('base64');
  const key = `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
  return { cert: `${leaf.toString('pem')}\n`, key, ca: `${caCert.toString('pem')}\n` };
}

/** An in-memory adapter we can enumerate (for `revokeRefreshTokens`), one per provider instance. */
function memoryAdapterFactory(store: Map<string, { payload: AdapterPayload; expiresAt: number | undefined }>) {
  return class MemoryAdapter {
    readonly #model: string;
    constructor(model: string) {
      this.#model = model;
    }
    #key(id: string): string {
      return `${this.#model}:${id}`;
    }
    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      store.set(this.#key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : undefined });
    }
    async find(id: string): Promise<AdapterPayload | undefined> {
      const entry = store.get(this.#key(id));
      if (entry === undefined || (entry.expiresAt !== undefined && entry.expiresAt < Date.now())) return undefined;
      return entry.payload;
    }
    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      for (const [key, entry] of store) {
        if (key.startsWith(`${this.#model}:`) && entry.payload.userCode === userCode) return entry.payload;
      }
      return undefined;
    }
    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      for (const [key, entry] of store) {
        if (key.startsWith(`${this.#model}:`) && entry.payload.uid === uid) return entry.payload;
      }
      return undefined;
    }
    async consume(id: string): Promise<void> {
      const entry = store.get(this.#key(id));
      if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string): Promise<void> {
      store.delete(this.#key(id));
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      for (const [key, entry] of store) {
        if (entry.payload.grantId === grantId) store.delete(key);
      }
    }
  };
}

/** Starts the OP; see the module comment. Always `close()` it (afterAll). */
export async function startTestOpenIdProvider(options: TestOpOptions = {}): Promise<TestOpenIdProvider> {
  const material = options.certificate
    ? {
        cert: options.certificate.cert,
        key: options.certificate.key,
        ca: options.certificate.ca ?? options.certificate.cert,
      }
    : await createTestCertificate();

  let handler:
    | ((req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void)
    | undefined;
  const server: Server = createServer({ cert: material.cert, key: material.key }, (req, res) => {
    if (handler) handler(req, res);
    else {
      res.statusCode = 503;
      res.end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const issuer = `https://127.0.0.1:${port}`;

  const audiences = options.audiences ?? [DEFAULT_AUDIENCE];
  const audience = audiences[0]!;
  const accessTokenTTL = options.accessTokenTTL ?? 600;
  const idTokenTTL = options.idTokenTTL ?? 600;
  const refreshTokenTTL = options.refreshTokenTTL ?? 3600;
  const defaultGroups = options.defaultGroups ?? ['developers'];

  // Keys: the OP's signing key (RS256 for ID tokens and JWT access tokens), the private_key_jwt client's key and the
  // subject-token issuer's key (the harness plays a workload identity issuer).
  const [opKeys, clientKeys, subjectKeys] = await Promise.all([
    generateKeyPair('RS256', { extractable: true }),
    generateKeyPair('RS256', { extractable: true }),
    generateKeyPair('ES256', { extractable: true }),
  ]);
  const opJwk: JWK = { ...(await exportJWK(opKeys.privateKey)), kid: 'op-rs256', use: 'sig', alg: 'RS256' };
  const clientKid = 'client-rs256';
  const clientPublicJwk: JWK = { ...(await exportJWK(clientKeys.publicKey)), kid: clientKid, use: 'sig', alg: 'RS256' };
  const clientPrivatePem = await exportPKCS8(clientKeys.privateKey);

  const clients: TestOpClients = {
    basic: { clientId: 'cc-basic', clientSecret: randomBytes(24).toString('base64url') },
    post: { clientId: 'cc-post', clientSecret: randomBytes(24).toString('base64url') },
    privateKeyJwt: { clientId: 'cc-jwt', privateKeyPem: clientPrivatePem, kid: clientKid },
    exchange: { clientId: 'exchange' },
    cli: { clientId: 'kubectl-cli', redirectUri: 'http://127.0.0.1/callback' },
  };

  const store = new Map<string, { payload: AdapterPayload; expiresAt: number | undefined }>();
  const grants: GrantEvent[] = [];
  const clientGroups = options.clientGroups ?? {};

  const restoreConsole = options.verbose ? undefined : silenceOidcProviderNotices();

  const provider = new Provider(issuer, {
    adapter: memoryAdapterFactory(store),
    jwks: { keys: [opJwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    clients: [
      {
        client_id: clients.basic.clientId,
        client_secret: clients.basic.clientSecret,
        token_endpoint_auth_method: 'client_secret_basic',
        grant_types: ['client_credentials', TOKEN_EXCHANGE_GRANT],
        response_types: [],
        redirect_uris: [],
      },
      {
        client_id: clients.post.clientId,
        client_secret: clients.post.clientSecret,
        token_endpoint_auth_method: 'client_secret_post',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
      },
      {
        client_id: clients.privateKeyJwt.clientId,
        token_endpoint_auth_method: 'private_key_jwt',
        token_endpoint_auth_signing_alg: 'RS256',
        jwks: { keys: [clientPublicJwk] },
        grant_types: ['client_credentials', TOKEN_EXCHANGE_GRANT],
        response_types: [],
        redirect_uris: [],
      },
      {
        client_id: clients.exchange.clientId,
        token_endpoint_auth_method: 'none',
        grant_types: [TOKEN_EXCHANGE_GRANT],
        response_types: [],
        redirect_uris: [],
      },
      {
        client_id: clients.cli.clientId,
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
        response_types: ['code'],
        redirect_uris: [clients.cli.redirectUri],
      },
      ...(options.extraClients ?? []),
    ],
    claims: { openid: ['sub'], groups: ['groups'], email: ['email'] },
    // Put scope-requested claims (groups) into the ID token too: kube-apiserver reads the ID token.
    conformIdTokenClaims: false,
    scopes: ['openid', 'offline_access', 'groups', 'email'],
    async findAccount(_ctx: unknown, sub: string) {
      const account = options.accounts?.[sub];
      return {
        accountId: sub,
        async claims() {
          return { sub, groups: account?.groups ?? defaultGroups, ...(account?.email ? { email: account.email } : {}) };
        },
      };
    },
    async extraTokenClaims(_ctx: unknown, token: any) {
      // JWT access tokens carry groups too: for people from their account, for machines from `clientGroups`.
      const exchanged = (token as { extra?: Record<string, unknown> }).extra;
      if (exchanged?.exchanged_sub) return exchanged; // set by the token-exchange grant below
      const accountId = (token as { accountId?: string }).accountId;
      if (accountId) return { groups: options.accounts?.[accountId]?.groups ?? defaultGroups };
      const clientId = (token as { clientId?: string }).clientId;
      return { groups: (clientId && clientGroups[clientId]) ?? ['machines'] };
    },
    formats: {
      customizers: {
        // A token-exchange access token's subject is the subject token's, not the client's.
        async jwt(_ctx: unknown, _token: unknown, jwt: { payload: Record<string, unknown> }) {
          if (typeof jwt.payload.exchanged_sub === 'string') {
            jwt.payload.sub = jwt.payload.exchanged_sub;
            delete jwt.payload.exchanged_sub;
          }
        },
      },
    },
    pkce: { required: () => true },
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx: unknown, client: any, code: any) =>
      client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
    ttl: {
      AccessToken: (_ctx: unknown, token: any) => token.resourceServer?.accessTokenTTL ?? accessTokenTTL,
      ClientCredentials: (_ctx: unknown, token: any) => token.resourceServer?.accessTokenTTL ?? accessTokenTTL,
      IdToken: idTokenTTL,
      RefreshToken: refreshTokenTTL,
      AuthorizationCode: 60,
      DeviceCode: 600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      deviceFlow: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx: unknown, _client: unknown, oneOf: string | undefined) => oneOf ?? audience,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, resourceIndicator: string) => {
          if (!audiences.includes(resourceIndicator))
            throw new errors.InvalidTarget(`unknown resource ${resourceIndicator}`);
          return {
            scope: 'groups',
            audience: resourceIndicator,
            accessTokenTTL,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  });
  restoreConsole?.();

  // RFC 8693 token exchange: subject_token (a JWT from the harness's subject issuer or accepted by
  // options.verifySubjectToken) -> a JWT access token for the requested (or default) resource, sub = subject's sub.
  const subjectPublicKey = subjectKeys.publicKey;
  provider.registerGrantType(
    TOKEN_EXCHANGE_GRANT,
    async (ctx: KoaContextWithOIDC) => {
      const params = ctx.oidc.params as Record<string, string | undefined>;
      if (!params.subject_token) throw new errors.InvalidRequest('missing required parameter subject_token');
      if (
        params.subject_token_type !== 'urn:ietf:params:oauth:token-type:jwt' &&
        params.subject_token_type !== 'urn:ietf:params:oauth:token-type:id_token' &&
        params.subject_token_type !== 'urn:ietf:params:oauth:token-type:access_token'
      ) {
        throw new errors.InvalidRequest('unsupported subject_token_type');
      }
      let sub: string | undefined;
      try {
        const { payload } = await jwtVerify(params.subject_token, subjectPublicKey, {
          issuer: SUBJECT_TOKEN_ISSUER,
          audience: SUBJECT_TOKEN_AUDIENCE,
          algorithms: ['ES256'],
        });
        sub = payload.sub;
      } catch {
        sub = (await options.verifySubjectToken?.(params.subject_token))?.sub;
      }
      if (!sub) throw new errors.InvalidGrant('subject token is invalid');
      const resource = params.resource ?? params.audience ?? audience;
      if (!audiences.includes(resource)) throw new errors.InvalidTarget(`unknown resource ${resource}`);
      const client = ctx.oidc.client!;
      const token = new provider.ClientCredentials({ client, scope: undefined });
      token.resourceServer = new provider.ResourceServer(resource, {
        scope: 'groups',
        audience: resource,
        accessTokenTTL,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      });
      token.extra = {
        exchanged_sub: sub,
        act: { sub: client.clientId },
        groups: clientGroups[client.clientId] ?? ['machines'],
      };
      const value = await token.save();
      ctx.body = {
        access_token: value,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        token_type: 'Bearer',
        expires_in: token.expiration,
      };
    },
    [
      'subject_token',
      'subject_token_type',
      'requested_token_type',
      'audience',
      'resource',
      'scope',
      'actor_token',
      'actor_token_type',
    ],
  );

  provider.on('grant.success', (ctx: KoaContextWithOIDC) => {
    grants.push({
      grantType: String(ctx.oidc.params?.grant_type),
      clientId: ctx.oidc.client?.clientId,
      outcome: 'success',
    });
  });
  provider.on('grant.error', (ctx: KoaContextWithOIDC, error: Error & { error?: string }) => {
    grants.push({
      grantType: String(ctx.oidc.params?.grant_type),
      clientId: ctx.oidc.client?.clientId,
      outcome: 'error',
      error: error.error ?? error.message,
    });
  });
  // Silence the provider's own error logging of expected failures (it emits; no listener means console output).
  provider.on('server_error', () => {});

  const deviceInterval = options.deviceInterval ?? 1;
  provider.use(async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (ctx.path === '/device/auth' && ctx.status === 200 && ctx.body && typeof ctx.body === 'object') {
      ctx.body = { ...ctx.body, interval: deviceInterval };
    }
  });

  const callback = provider.callback();
  handler = (req, res) => {
    void callback(req, res);
  };

  const dispatcher = new Agent({ connect: { ca: material.ca } });

  const subjectTokenKey: JWK = { ...(await exportJWK(subjectKeys.privateKey)), alg: 'ES256' };
  const signSubjectToken = (claims: SubjectTokenClaims = {}): Promise<string> =>
    signSubjectTokenWith(subjectTokenKey, claims);

  return {
    issuer,
    caPem: material.ca,
    caBase64: Buffer.from(material.ca).toString('base64'),
    clients,
    audience,
    grants,
    dispatcher,
    provider,
    signSubjectToken,
    subjectTokenKey,
    approveDeviceCode: (userCode, opts = {}) => approveDeviceCodeAt({ issuer, dispatcher }, userCode, opts),
    login: (authorizationUrl, opts = {}) => loginAt({ issuer, dispatcher }, authorizationUrl, opts),
    async revokeRefreshTokens() {
      let count = 0;
      for (const key of [...store.keys()]) {
        if (key.startsWith('RefreshToken:')) {
          store.delete(key);
          count += 1;
        }
      }
      return count;
    },
    async close() {
      await dispatcher.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface SubjectTokenClaims {
  sub?: string;
  aud?: string;
  iss?: string;
  expiresInSeconds?: number;
}

/** A subject token for the test OP's token exchange, signed with its `subjectTokenKey` (from any process). */
export async function signSubjectTokenWith(subjectTokenKey: JWK, claims: SubjectTokenClaims = {}): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT' })
    .setIssuer(claims.iss ?? SUBJECT_TOKEN_ISSUER)
    .setAudience(claims.aud ?? SUBJECT_TOKEN_AUDIENCE)
    .setSubject(claims.sub ?? 'system:serviceaccount:fleet:controller')
    .setIssuedAt()
    .setExpirationTime(`${claims.expiresInSeconds ?? 600}s`)
    .sign(await importJWK(subjectTokenKey, 'ES256'));
}

/** Where a test OP is, from any process (e.g. a vitest worker when the OP runs in globalSetup). */
export interface TestOpEndpoint {
  issuer: string;
  /** A dispatcher trusting the OP's CA; or give `caPem`. */
  dispatcher?: Dispatcher;
  caPem?: string;
}

function endpointDispatcher(op: TestOpEndpoint): { dispatcher: Dispatcher; owned: boolean } {
  if (op.dispatcher) return { dispatcher: op.dispatcher, owned: false };
  if (!op.caPem) throw new TypeError('TestOpEndpoint needs a dispatcher or caPem');
  return { dispatcher: new Agent({ connect: { ca: op.caPem } }), owned: true };
}

/**
 * The person at the device-verification page of a test OP: enter `userCode`, confirm, sign in as `login`
 * (default 'alice'), consent. Works from any process that knows the issuer and its CA.
 */
export async function approveDeviceCodeAt(
  op: TestOpEndpoint,
  userCode: string,
  opts: { login?: string } = {},
): Promise<void> {
  const { dispatcher, owned } = endpointDispatcher(op);
  try {
    const b = new Browser(dispatcher, op.issuer);
    const page = await b.get(`${op.issuer}/device`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)?.[1];
    if (!xsrf) throw new Error(`no device input form at ${op.issuer}/device: ${page.status}`);
    const confirm = await b.post(`${op.issuer}/device`, { xsrf, user_code: userCode });
    const xsrf2 = /name="xsrf" value="([^"]+)"/.exec(confirm.body)?.[1];
    if (!xsrf2 || !confirm.body.includes('name="confirm"'))
      throw new Error(`device code ${userCode} not accepted: ${confirm.status} ${stripTags(confirm.body)}`);
    const done = await b.follow(
      await b.post(`${op.issuer}/device`, { xsrf: xsrf2, user_code: userCode, confirm: 'yes' }),
      opts.login ?? 'alice',
    );
    if (!/Sign-in Success/.test(done.body))
      throw new Error(`device approval did not succeed: ${done.status} ${stripTags(done.body)}`);
  } finally {
    if (owned) await dispatcher.close();
  }
}

/**
 * The person in the browser: open `authorizationUrl`, sign in as `login`, consent (or abort), follow the redirect to
 * the client's redirect URI (e.g. the plugin's loopback listener). Works from any process.
 */
export async function loginAt(
  op: TestOpEndpoint,
  authorizationUrl: string,
  opts: { login?: string; abort?: boolean } = {},
): Promise<{ status: number; body: string; redirectedTo: string }> {
  const { dispatcher, owned } = endpointDispatcher(op);
  try {
    const b = new Browser(dispatcher, op.issuer);
    const result = await b.follow(await b.get(authorizationUrl), opts.login ?? 'alice', opts.abort ?? false);
    return { status: result.status, body: result.body, redirectedTo: result.url };
  } finally {
    if (owned) await dispatcher.close();
  }
}

function stripTags(html: string): string {
  return html
    .replace(/<style[\s\S]*?<\/style>/g, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
}

/** oidc-provider prints development NOTICE/WARNING lines through console.info/warn; keep test output readable. */
function silenceOidcProviderNotices(): () => void {
  const { info, warn } = console;
  const filter =
    (original: (...args: unknown[]) => void) =>
    (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].includes('oidc-provider ')) return;
      original(...args);
    };
  console.info = filter(info);
  console.warn = filter(warn);
  // Notices are also printed lazily (first use of a default); keep the filter installed for the process.
  return () => {};
}

interface Page {
  status: number;
  url: string;
  body: string;
  location: string | undefined;
}

/** Just enough of a browser: a cookie jar, manual redirects, the dev-interaction login and consent forms. */
class Browser {
  readonly #cookies = new Map<string, string>();
  readonly #dispatcher: Dispatcher;
  readonly #issuer: string;
  constructor(dispatcher: Dispatcher, issuer: string) {
    this.#dispatcher = dispatcher;
    this.#issuer = issuer;
  }

  async #request(url: string, init: { method: string; form?: Record<string, string> }): Promise<Page> {
    const headers: Record<string, string> = {};
    if (url.startsWith(this.#issuer) && this.#cookies.size > 0) {
      headers.cookie = [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    }
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const res = await fetch(url, {
      method: init.method,
      headers,
      body,
      redirect: 'manual',
      dispatcher: this.#dispatcher,
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired =
        attrs.some((a) => /^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now()) ||
        attrs.some((a) => /^\s*max-age=0/i.test(a));
      if (expired || value === '') this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
    const location = res.headers.get('location') ?? undefined;
    return {
      status: res.status,
      url,
      body: await res.text(),
      location: location ? new URL(location, url).toString() : undefined,
    };
  }

  get(url: string): Promise<Page> {
    return this.#request(url, { method: 'GET' });
  }

  post(url: string, form: Record<string, string>): Promise<Page> {
    return this.#request(url, { method: 'POST', form });
  }

  /** Follows redirects and answers login / consent pages until a page that is neither (or a non-OP URL). */
  async follow(start: Page, login: string, abort = false): Promise<Page> {
    let page = start;
    for (let step = 0; step < 20; step += 1) {
      if (page.location) {
        page = await this.get(page.location);
        continue;
      }
      if (!page.url.startsWith(this.#issuer)) return page;
      const action = /<form[^>]*action="([^"]+)"[^>]*method="post"/.exec(page.body)?.[1];
      if (action && page.body.includes('name="prompt" value="login"')) {
        const target = new URL(action.replace(/&amp;/g, '&'), page.url).toString();
        page = abort
          ? await this.get(`${target}/abort`)
          : await this.post(target, { prompt: 'login', login, password: 'any' });
        continue;
      }
      if (action && page.body.includes('name="prompt" value="consent"')) {
        page = await this.post(new URL(action.replace(/&amp;/g, '&'), page.url).toString(), { prompt: 'consent' });
        continue;
      }
      return page;
    }
    throw new Error('too many redirects in the interaction flow');
  }
}
