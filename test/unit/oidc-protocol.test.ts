// The OIDC protocol steps with hand-made responses (no network): discovery, token responses, device and code flow.
import { describe, expect, it } from 'vitest';
import { isCredentialsError } from '../../src/base/errors.js';
import {
  isExpectedState,
  audienceParams,
  authorizationUrl,
  clientCredentialsParams,
  discoveryRequest,
  OAuthErrorResponse,
  processAuthorizationCallback,
  processDeviceAuthorizationResponse,
  processDiscoveryResponse,
  processTokenResponse,
  tokenExchangeParams,
  tokenRequest,
  type HttpResponse,
  type ProviderMetadata,
} from '../../src/providers/oidc/protocol.js';

const ISSUER = 'https://op.test/realm';
const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});
const metadata: ProviderMetadata = {
  issuer: ISSUER,
  token_endpoint: `${ISSUER}/token`,
  jwks_uri: `${ISSUER}/jwks`,
  authorization_endpoint: `${ISSUER}/auth`,
  device_authorization_endpoint: `${ISSUER}/device/auth`,
  code_challenge_methods_supported: ['S256'],
};

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isCredentialsError(error) ? error.code : (error as Error).name;
  }
  return undefined;
}

describe('discovery', () => {
  it('requests <issuer>/.well-known/openid-configuration, dropping one trailing slash', () => {
    expect(discoveryRequest(ISSUER).url).toBe(`${ISSUER}/.well-known/openid-configuration`);
    expect(discoveryRequest(`${ISSUER}/`).url).toBe(`${ISSUER}/.well-known/openid-configuration`);
  });

  it('accepts a document whose issuer is exactly the configured one', () => {
    const doc = {
      issuer: ISSUER,
      token_endpoint: metadata.token_endpoint,
      jwks_uri: metadata.jwks_uri,
      authorization_endpoint: metadata.authorization_endpoint,
    };
    expect(processDiscoveryResponse(ISSUER, json(200, doc))).toMatchObject({
      issuer: ISSUER,
      token_endpoint: metadata.token_endpoint,
    });
  });

  it('refuses an issuer that differs in any byte (trailing slash, case, port)', () => {
    for (const issuer of [`${ISSUER}/`, ISSUER.toUpperCase(), 'https://op.test:443/realm', 'https://evil.test/realm']) {
      expect(
        codeOf(() =>
          processDiscoveryResponse(
            ISSUER,
            json(200, { issuer, token_endpoint: 'https://x/t', jwks_uri: 'https://x/j' }),
          ),
        ),
      ).toBe('ERR_OIDC_ISSUER_MISMATCH');
    }
  });

  it('refuses non-200, non-JSON and documents without https endpoints', () => {
    expect(codeOf(() => processDiscoveryResponse(ISSUER, json(404, {})))).toBe('ERR_OIDC_DISCOVERY');
    expect(codeOf(() => processDiscoveryResponse(ISSUER, { status: 200, headers: {}, body: '<html>' }))).toBe(
      'ERR_OIDC_DISCOVERY',
    );
    expect(
      codeOf(() =>
        processDiscoveryResponse(
          ISSUER,
          json(200, { issuer: ISSUER, token_endpoint: 'http://op.test/token', jwks_uri: 'https://x/j' }),
        ),
      ),
    ).toBe('ERR_OIDC_DISCOVERY');
  });
});

describe('token endpoint', () => {
  it('builds a form POST with client authentication merged in', () => {
    const req = tokenRequest(metadata, clientCredentialsParams({ scopes: ['a', 'b'], audience: 'https://k8s.test' }), {
      headers: { authorization: 'Basic x' },
      params: {},
    });
    expect(req).toMatchObject({
      method: 'POST',
      url: metadata.token_endpoint,
      headers: { authorization: 'Basic x', 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({
      grant_type: 'client_credentials',
      scope: 'a b',
      resource: 'https://k8s.test',
    });
  });

  it('sends an absolute-URI audience as resource (RFC 8707), anything else as audience', () => {
    expect(audienceParams('https://k8s.test')).toEqual({ resource: 'https://k8s.test' });
    expect(audienceParams('kubernetes')).toEqual({ audience: 'kubernetes' });
    expect(audienceParams(undefined)).toEqual({});
  });

  it('builds an RFC 8693 exchange asking for an access token', () => {
    const params = tokenExchangeParams({
      subjectToken: 'sat',
      subjectTokenType: 'urn:ietf:params:oauth:token-type:jwt',
      scopes: [],
      audience: 'kubernetes',
    });
    expect(params).toMatchObject({
      grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
      subject_token: 'sat',
      requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      audience: 'kubernetes',
    });
  });

  it('reads a successful response and keeps refresh and ID tokens', () => {
    expect(
      processTokenResponse(
        metadata,
        json(200, { access_token: 'at', token_type: 'Bearer', expires_in: 300, refresh_token: 'rt', id_token: 'it' }),
      ),
    ).toEqual({
      access_token: 'at',
      token_type: 'Bearer',
      expires_in: 300,
      refresh_token: 'rt',
      id_token: 'it',
    });
  });

  it('hands OAuth errors back as data (invalid_grant, authorization_pending) and other failures as ERR_OIDC_GRANT', () => {
    let caught: unknown;
    try {
      processTokenResponse(
        metadata,
        json(400, { error: 'invalid_grant', error_description: 'grant request is invalid' }),
      );
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(OAuthErrorResponse);
    expect(caught).toMatchObject({ error: 'invalid_grant', message: 'invalid_grant: grant request is invalid' });
    expect(codeOf(() => processTokenResponse(metadata, json(500, { error: 'server_error' })))).toBe('ERR_OIDC_GRANT');
    expect(codeOf(() => processTokenResponse(metadata, json(200, { token_type: 'Bearer' })))).toBe('ERR_OIDC_GRANT');
  });
});

describe('device authorization (RFC 8628)', () => {
  it('defaults the poll interval to 5 s', () => {
    const device = processDeviceAuthorizationResponse(
      metadata,
      json(200, {
        device_code: 'dc',
        user_code: 'ABCD-EFGH',
        verification_uri: 'https://op.test/device',
        expires_in: 600,
      }),
    );
    expect(device).toMatchObject({ user_code: 'ABCD-EFGH', interval: 5 });
  });

  it('refuses a response without a user code', () => {
    expect(
      codeOf(() =>
        processDeviceAuthorizationResponse(metadata, json(200, { device_code: 'dc', verification_uri: 'x' })),
      ),
    ).toBe('ERR_OIDC_LOGIN_FAILED');
  });
});

describe('authorization code + PKCE', () => {
  const o = {
    clientID: 'cli',
    redirectUri: 'http://127.0.0.1:5000/callback',
    scopes: ['openid', 'offline_access'],
    audience: undefined,
    state: 'st',
    nonce: 'no',
    codeChallenge: 'cc',
  };

  it('builds the authorization URL with S256, state, nonce and a consent prompt for offline_access', () => {
    const url = new URL(authorizationUrl(metadata, o));
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'cli',
      redirect_uri: o.redirectUri,
      code_challenge: 'cc',
      code_challenge_method: 'S256',
      state: 'st',
      nonce: 'no',
      prompt: 'consent',
      scope: 'openid offline_access',
    });
  });

  it('refuses an issuer that cannot do S256', () => {
    expect(codeOf(() => authorizationUrl({ ...metadata, code_challenge_methods_supported: ['plain'] }, o))).toBe(
      'ERR_OIDC_DISCOVERY',
    );
  });

  it('takes the code only with the right state; reports an error redirect', () => {
    expect(processAuthorizationCallback(new URL('http://127.0.0.1/callback?code=c&state=st'), 'st')).toBe('c');
    expect(
      codeOf(() => processAuthorizationCallback(new URL('http://127.0.0.1/callback?code=c&state=other'), 'st')),
    ).toBe('ERR_OIDC_LOGIN_FAILED');
    expect(
      codeOf(() =>
        processAuthorizationCallback(new URL('http://127.0.0.1/callback?error=access_denied&state=st'), 'st'),
      ),
    ).toBe('ERR_OIDC_LOGIN_FAILED');
  });
});

describe('discovery: every endpoint we send to is https', () => {
  it.each(['device_authorization_endpoint', 'authorization_endpoint'])(
    'a plain-http %s is refused (client secrets / device codes / the login page would travel in the clear)',
    (name) => {
      const doc = {
        issuer: ISSUER,
        token_endpoint: `${ISSUER}/token`,
        jwks_uri: `${ISSUER}/jwks`,
        [name]: 'http://op.test/realm/endpoint',
      };
      expect(codeOf(() => processDiscoveryResponse(ISSUER, json(200, doc)))).toBe('ERR_OIDC_DISCOVERY');
    },
  );
});

describe('the loopback state check', () => {
  it('only the exact state is accepted, whatever its length', () => {
    expect(isExpectedState('abc123', 'abc123')).toBe(true);
    expect(isExpectedState('abc124', 'abc123')).toBe(false);
    expect(isExpectedState('abc12', 'abc123')).toBe(false);
    expect(isExpectedState('', 'abc123')).toBe(false);
    expect(isExpectedState(null, 'abc123')).toBe(false);
  });
});
