/**
 * Obtaining a token (runs under the runtime's cache lock, on a cache miss only): discovery, then the refresh token
 * from the previous cache entry if there is one (interactive identities), else the configured grant; then validation
 * of the token to be returned BEFORE it is handed to the runtime (which prints and caches it).
 *
 * Side effects come in through {@link IssueDeps} (network, clock, sleep, browser) so tests can run every path.
 */
import { randomBytes, createHash } from 'node:crypto';
import { CredentialsError, isCredentialsError } from '../../base/errors.js';
import { formatTimestamp, type ExecCredentialStatus } from '../../base/exec-credential.js';
import type { IssueContext, IssuedCredential } from '../../plugin/provider.js';
import {
  chooseClientAuth,
  clientAuthentication,
  loadClientCredential,
  readCredentialFile,
  withMethod,
  type ClientAuthChoice,
  type ClientCredential,
} from './client-auth.js';
import { createIssuerSend, type Send } from './issuer-http.js';
import { awaitLoopbackRedirect } from './loopback.js';
import {
  authorizationCodeParams,
  authorizationUrl,
  clientCredentialsParams,
  deviceAuthorizationRequest,
  deviceCodeParams,
  discoveryRequest,
  grantError,
  jwksRequest,
  OAuthErrorResponse,
  oauthErrorOf,
  isExpectedState,
  processAuthorizationCallback,
  processDeviceAuthorizationResponse,
  processDiscoveryResponse,
  processJwksResponse,
  processTokenResponse,
  refreshTokenParams,
  tokenExchangeParams,
  tokenRequest,
  type DeviceAuthorization,
  type ProviderMetadata,
  type TokenResponse,
} from './protocol.js';
import {
  assertOidcClusterConfig,
  DEFAULT_LOGIN_TIMEOUT_MS,
  INTERACTIVE_GRANTS,
  type OidcSettings,
} from './settings.js';
import { expirationWithMargin, validateToken } from './validate.js';

/** What the plugin keeps in its 0600 cache entry besides the status. */
export interface OidcState {
  refreshToken?: string;
  /** `sub` of the login the refresh token belongs to: a refreshed token must name the same subject (Core §12.2). */
  subject?: string;
}

export interface IssueDeps {
  send?: Send;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  openBrowser?: (url: string) => void;
}

const sleepDefault = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/**
 * `xdg-open` / `open` / the Windows URL handler, detached, errors ignored: the URL is on stderr anyway. Never through
 * `cmd /c start`: cmd treats `&` in the authorization URL as a command separator.
 */
async function openBrowserDefault(url: string): Promise<void> {
  const { spawn } = await import('node:child_process');
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['rundll32', ['url.dll,FileProtocolHandler', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command as string, args as string[], { detached: true, stdio: 'ignore' });
    child.on('error', () => {});
    child.unref();
  } catch {
    // printed on stderr already
  }
}

export async function issueOidcToken(
  settings: OidcSettings,
  context: IssueContext<OidcState>,
  deps: IssueDeps = {},
): Promise<IssuedCredential<OidcState>> {
  const issuer =
    deps.send === undefined
      ? createIssuerSend(
          { issuerCA: settings.issuerCA, proxy: settings.proxy, timeoutMs: settings.timeoutMs },
          context.signal,
        )
      : undefined;
  const send = deps.send ?? issuer!.send;
  try {
    return await new Flow(settings, context, send, deps).run();
  } finally {
    await issuer?.close();
  }
}

class Flow {
  #metadata!: ProviderMetadata;
  #jwks: { keys: Record<string, unknown>[] } | undefined;
  #credential: ClientCredential | undefined;
  #auth!: ClientAuthChoice;

  readonly #settings: OidcSettings;
  readonly #context: IssueContext<OidcState>;
  readonly #send: Send;
  readonly #deps: IssueDeps;

  constructor(settings: OidcSettings, context: IssueContext<OidcState>, send: Send, deps: IssueDeps) {
    this.#settings = settings;
    this.#context = context;
    this.#send = send;
    this.#deps = deps;
  }

  #say(message: string): void {
    this.#context.stderr.write(`clusterprofile-oidc: ${message}\n`);
  }

  async run(): Promise<IssuedCredential<OidcState>> {
    const settings = this.#settings;
    const context = this.#context;
    const interactiveGrant = INTERACTIVE_GRANTS.includes(settings.grant);
    const refreshToken = context.previous?.state?.refreshToken;
    // Without a refresh token and without a terminal there is nothing to try: say so before any network call.
    if (interactiveGrant && refreshToken === undefined) this.#requireInteractive();
    await assertOidcClusterConfig(settings.clusterConfig);
    const discovery = discoveryRequest(settings.issuerURL);
    this.#metadata = processDiscoveryResponse(settings.issuerURL, await this.#send(discovery));
    this.#auth = chooseClientAuth(
      { method: settings.clientAuth, given: settings.clientAuthGiven },
      this.#metadata,
      discovery.url,
    );

    if (interactiveGrant && refreshToken !== undefined) {
      try {
        return await this.#accept(await this.#token('refresh_token', refreshTokenParams({ refreshToken })), undefined, {
          refreshToken,
          subject: context.previous?.state?.subject,
        });
      } catch (error) {
        const rejected =
          error instanceof OAuthErrorResponse || (isCredentialsError(error) && error.code === 'ERR_OIDC_TOKEN_INVALID');
        if (!rejected) throw error;
        if (!context.interactive) {
          throw new CredentialsError(
            'ERR_OIDC_REFRESH_FAILED',
            `refreshing failed (${error.message}) and a new login needs a terminal (spec.interactive is false)`,
            {
              path: this.#metadata.token_endpoint,
              hint: 'run a kubectl command in a terminal to log in again (interactiveMode IfAvailable), or the plugin with --force-refresh',
              cause: error,
            },
          );
        }
        this.#say(`refreshing failed (${error.message}); logging in again`);
      }
    }

    switch (settings.grant) {
      case 'client_credentials':
        return this.#accept(await this.#token('client_credentials', clientCredentialsParams(settings)));
      case 'token_exchange': {
        const subjectToken = await readCredentialFile(
          settings.subjectTokenFile!,
          '--subject-token-file',
          'subject token file',
        );
        return this.#accept(
          await this.#token(
            'token_exchange',
            tokenExchangeParams({
              subjectToken,
              subjectTokenType: settings.subjectTokenType,
              scopes: settings.scopes,
              audience: settings.audience,
            }),
          ),
        );
      }
      case 'device_code':
        this.#requireInteractive();
        return this.#deviceLogin();
      case 'authorization_code':
        this.#requireInteractive();
        return this.#codeLogin();
    }
  }

  #requireInteractive(): void {
    if (!this.#context.interactive) {
      throw new CredentialsError(
        'ERR_OIDC_INTERACTIVE_REQUIRED',
        `the ${this.#settings.grant} grant needs a person at a terminal, but spec.interactive is false`,
        {
          path: '$.spec.interactive',
          hint: 'run kubectl in a terminal with interactiveMode IfAvailable or Always; controllers use --grant client_credentials or token_exchange',
        },
      );
    }
  }

  /** The client's credential, presented with the token endpoint's method (or `method`). */
  async #clientCredential(method: ClientCredential['method'] = this.#auth.token): Promise<ClientCredential> {
    this.#credential ??= await loadClientCredential({
      method: this.#auth.token,
      clientID: this.#settings.clientID,
      clientSecretFile: this.#settings.clientSecretFile,
      privateKeyFile: this.#settings.privateKeyFile,
      privateKeyAlg: this.#settings.privateKeyAlg,
      privateKeyId: this.#settings.privateKeyId,
    });
    return withMethod(this.#credential, method);
  }

  /** One token-endpoint round trip. OAuth errors are thrown as {@link OAuthErrorResponse} for the caller. */
  async #token(grant: string, params: Record<string, string | undefined>): Promise<TokenResponse> {
    const auth = await clientAuthentication(
      await this.#clientCredential(),
      this.#metadata.token_endpoint,
      this.#context.now(),
    );
    const response = await this.#send(tokenRequest(this.#metadata, params, auth, this.#settings.tokenParams));
    try {
      return processTokenResponse(this.#metadata, response);
    } catch (error) {
      if (error instanceof OAuthErrorResponse && grant !== 'refresh_token' && grant !== 'device_code')
        throw grantError(grant, this.#metadata, error);
      throw error;
    }
  }

  async #keys(): Promise<{ keys: Record<string, unknown>[] }> {
    this.#jwks ??= processJwksResponse(this.#metadata, await this.#send(jwksRequest(this.#metadata)));
    return this.#jwks;
  }

  /** Validates the token to be returned, derives the expiry, keeps the (rotated) refresh token. */
  async #accept(response: TokenResponse, nonce?: string, refreshed?: OidcState): Promise<IssuedCredential<OidcState>> {
    const settings = this.#settings;
    const now = this.#context.now();
    const jwks = (await this.#keys()) as never;
    const common = { issuer: settings.issuerURL, algorithms: settings.signingAlgorithms, now };
    if (response.id_token !== undefined && (nonce !== undefined || settings.token === 'id_token')) {
      await validateToken(response.id_token, jwks, {
        ...common,
        what: 'ID token',
        audience: settings.clientID,
        authorizedParty: settings.clientID,
        ...(nonce === undefined ? {} : { nonce }),
      });
    }
    let token: string;
    let exp: number;
    let subject: string | undefined;
    if (settings.token === 'id_token') {
      if (response.id_token === undefined) {
        throw new CredentialsError('ERR_OIDC_TOKEN_INVALID', 'the token response has no ID token', {
          path: this.#metadata.token_endpoint,
          hint: 'the openid scope may be missing at the issuer for this client, or set token: access_token',
        });
      }
      const { payload } = await validateToken(response.id_token, jwks, {
        ...common,
        what: 'ID token',
        audience: settings.clientID,
        authorizedParty: settings.clientID,
      });
      token = response.id_token;
      exp = payload.exp;
      subject = payload.sub;
    } else {
      const { payload } = await validateToken(response.access_token, jwks, {
        ...common,
        what: 'access token',
        audience: settings.audience!,
      });
      token = response.access_token;
      exp = payload.exp;
      subject = payload.sub;
    }
    if (refreshed?.subject !== undefined && subject !== refreshed.subject) {
      throw new CredentialsError(
        'ERR_OIDC_TOKEN_INVALID',
        `the refreshed token names subject ${JSON.stringify(subject)}, not ${JSON.stringify(refreshed.subject)} of the login; it was not used`,
        {
          path: this.#metadata.token_endpoint,
        },
      );
    }
    const status: ExecCredentialStatus = {
      token,
      expirationTimestamp: formatTimestamp(expirationWithMargin(exp, now).getTime()),
    };
    const refreshToken = response.refresh_token ?? refreshed?.refreshToken;
    return {
      status,
      ...(refreshToken === undefined ? {} : { state: { refreshToken, ...(subject === undefined ? {} : { subject }) } }),
    };
  }

  // ----------------------------------------------------------------------------------------- RFC 8628 device flow
  /** The device authorization request, with the device endpoint's client authentication (see chooseClientAuth). */
  async #deviceAuthorization(): Promise<DeviceAuthorization> {
    const settings = this.#settings;
    const context = this.#context;
    const metadata = this.#metadata;
    const request = async (method: ClientCredential['method']) =>
      this.#send(
        deviceAuthorizationRequest(
          metadata,
          settings,
          await clientAuthentication(await this.#clientCredential(method), metadata.issuer, context.now()),
        ),
      );
    let response = await request(this.#auth.device);
    if (this.#auth.deviceFallback !== undefined && oauthErrorOf(response)?.error === 'invalid_client') {
      response = await request(this.#auth.deviceFallback);
    }
    return processDeviceAuthorizationResponse(metadata, response);
  }

  async #deviceLogin(): Promise<IssuedCredential<OidcState>> {
    const settings = this.#settings;
    const context = this.#context;
    const metadata = this.#metadata;
    const device = await this.#deviceAuthorization();
    this.#say(
      `to log in, open ${device.verification_uri} and enter the code ${device.user_code}` +
        (device.verification_uri_complete === undefined ? '' : `\n  (or open ${device.verification_uri_complete})`),
    );
    if (settings.openBrowser)
      (this.#deps.openBrowser ?? ((url: string) => void openBrowserDefault(url)))(
        device.verification_uri_complete ?? device.verification_uri,
      );
    const sleep = this.#deps.sleep ?? sleepDefault;
    // The device code's own lifetime, unless --login-timeout asks for less: the message names whichever ran out.
    const ours = settings.loginTimeoutMs !== undefined && settings.loginTimeoutMs < device.expires_in * 1000;
    const deadline = context.now().getTime() + (ours ? settings.loginTimeoutMs! : device.expires_in * 1000);
    const expired = (): CredentialsError =>
      ours
        ? new CredentialsError(
            'ERR_OIDC_LOGIN_FAILED',
            `no login within --login-timeout ${settings.loginTimeoutMs! / 1000} s (the issuer's device code was valid for ${device.expires_in} s)`,
            {
              path: '--login-timeout',
              hint: "run the command again; raise --login-timeout, or leave it out to wait as long as the issuer's device code lives",
            },
          )
        : new CredentialsError(
            'ERR_OIDC_LOGIN_FAILED',
            `the device code expired before the login was completed: the issuer's expires_in of ${device.expires_in} s ran out`,
            {
              path: metadata.device_authorization_endpoint ?? metadata.issuer,
              hint: `run the command again and complete the login in the browser within ${device.expires_in} s`,
            },
          );
    let interval = device.interval * 1000;
    for (;;) {
      await sleep(interval, context.signal);
      if (context.now().getTime() > deadline) throw expired();
      try {
        return await this.#accept(
          await this.#token('device_code', deviceCodeParams({ deviceCode: device.device_code })),
        );
      } catch (error) {
        if (!(error instanceof OAuthErrorResponse)) throw error;
        if (error.error === 'authorization_pending') continue;
        if (error.error === 'slow_down') {
          interval += 5000;
          continue;
        }
        if (error.error === 'expired_token') {
          throw new CredentialsError(
            'ERR_OIDC_LOGIN_FAILED',
            `the device code expired at the issuer (its expires_in was ${device.expires_in} s) before the login was completed`,
            {
              path: metadata.token_endpoint,
              cause: error,
              hint: `run the command again and complete the login in the browser within ${device.expires_in} s`,
            },
          );
        }
        throw new CredentialsError('ERR_OIDC_LOGIN_FAILED', `the device login failed: ${error.message}`, {
          path: metadata.token_endpoint,
          cause: error,
          ...(error.error === 'access_denied'
            ? { hint: 'the login was declined in the browser' }
            : { hint: 'run the command again to get a new code' }),
        });
      }
    }
  }

  // ------------------------------------------------------------------- authorization code + PKCE, loopback redirect
  async #codeLogin(): Promise<IssuedCredential<OidcState>> {
    const settings = this.#settings;
    const context = this.#context;
    const metadata = this.#metadata;
    const state = randomBytes(16).toString('base64url');
    const nonce = randomBytes(16).toString('base64url');
    const codeVerifier = randomBytes(32).toString('base64url');
    const codeChallenge = createHash('sha256').update(codeVerifier).digest('base64url');
    const loopback = await awaitLoopbackRedirect({
      port: settings.redirectPort,
      path: '/callback',
      timeoutMs: settings.loginTimeoutMs ?? DEFAULT_LOGIN_TIMEOUT_MS,
      signal: context.signal,
    });
    try {
      const url = authorizationUrl(metadata, {
        clientID: settings.clientID,
        redirectUri: loopback.redirectUri,
        scopes: settings.scopes,
        audience: settings.audience,
        state,
        nonce,
        codeChallenge,
      });
      this.#say(`to log in, open this URL in a browser:\n  ${url}`);
      if (settings.openBrowser) (this.#deps.openBrowser ?? ((u: string) => void openBrowserDefault(u)))(url);
      const callback = await loopback.next((received) => isExpectedState(received.searchParams.get('state'), state));
      const code = processAuthorizationCallback(callback, state);
      return await this.#accept(
        await this.#token(
          'authorization_code',
          authorizationCodeParams({ code, redirectUri: loopback.redirectUri, codeVerifier }),
        ),
        nonce,
      );
    } finally {
      await loopback.close();
    }
  }
}
