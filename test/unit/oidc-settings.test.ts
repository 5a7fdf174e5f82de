// clusterprofile-oidc settings from spec.cluster.config and flags: defaults and clear errors naming the field/flag.
import { describe, expect, it } from 'vitest';
import { oidcFlags } from '../helpers/oidc-plugin.js';
import { isCredentialsError } from '../../src/base/errors.js';
import type { ExecCredentialInput, FlagValues } from '../../src/plugin/provider.js';
import { oidcCacheKey, parseOidcSettings, type OidcFlags } from '../../src/providers/oidc/settings.js';

const noFlags = oidcFlags();
const base = { issuerURL: 'https://op.test', clientID: 'c', audience: 'https://k8s.test' };
const input = (config: unknown, interactive = false): ExecCredentialInput => ({
  apiVersion: 'client.authentication.k8s.io/v1',
  kind: 'ExecCredential',
  spec: { interactive, cluster: { server: 'https://k8s.test', config } },
});

function failure(
  config: unknown,
  flags: Partial<FlagValues<OidcFlags>> = {},
): { code: string; path: string | undefined; message: string } {
  try {
    parseOidcSettings(input(config), { ...noFlags, ...flags });
  } catch (error) {
    if (isCredentialsError(error)) return { code: error.code, path: error.path, message: error.message };
    throw error;
  }
  throw new Error('expected a failure');
}

describe('parseOidcSettings', () => {
  it('chooses the grant from the controller flags and returns the access token for machines', () => {
    expect(parseOidcSettings(input(base), { ...noFlags, 'client-secret-file': '/s' })).toMatchObject({
      grant: 'client_credentials',
      clientAuth: 'client_secret_basic',
      token: 'access_token',
    });
    expect(parseOidcSettings(input(base), { ...noFlags, 'private-key-file': '/k' })).toMatchObject({
      grant: 'client_credentials',
      clientAuth: 'private_key_jwt',
    });
    expect(parseOidcSettings(input(base), { ...noFlags, 'subject-token-file': '/t' })).toMatchObject({
      grant: 'token_exchange',
      clientAuth: 'none',
    });
  });

  it('defaults people to authorization_code returning the ID token, with openid and offline_access', () => {
    const settings = parseOidcSettings(
      input({ issuerURL: 'https://op.test', clientID: 'c', scopes: 'groups email' }, true),
      noFlags,
    );
    expect(settings).toMatchObject({ grant: 'authorization_code', token: 'id_token', interactive: true });
    expect(settings.scopes).toEqual(['openid', 'groups', 'email', 'offline_access']);
  });

  it('names the missing or bad field', () => {
    expect(failure(undefined)).toMatchObject({ code: 'ERR_OIDC_CONFIG', path: '$.spec.cluster.config' });
    expect(failure({ clientID: 'c' })).toMatchObject({
      code: 'ERR_OIDC_CONFIG',
      path: '$.spec.cluster.config.issuerURL',
    });
    expect(failure({ ...base, issuerURL: 'http://op.test' })).toMatchObject({
      path: '$.spec.cluster.config.issuerURL',
      message: expect.stringContaining('https'),
    });
    expect(failure({ issuerURL: 'https://op.test' })).toMatchObject({ path: '$.spec.cluster.config.clientID' });
    expect(failure({ ...base, issuerCA: Buffer.from('not a pem').toString('base64') })).toMatchObject({
      path: '$.spec.cluster.config.issuerCA',
    });
    expect(failure({ ...base, token: 'refresh_token' })).toMatchObject({ path: '$.spec.cluster.config.token' });
  });

  it('refuses none and HMAC algorithms in signingAlgorithms', () => {
    expect(failure({ ...base, signingAlgorithms: ['RS256', 'HS256'] })).toMatchObject({
      path: '$.spec.cluster.config.signingAlgorithms',
      message: expect.stringContaining('HS256'),
    });
    expect(failure({ ...base, signingAlgorithms: ['none'] })).toMatchObject({
      path: '$.spec.cluster.config.signingAlgorithms',
    });
  });

  it('names the flag for inconsistent controller settings', () => {
    expect(failure(base, { grant: 'password' })).toMatchObject({ path: '--grant' });
    expect(failure(base, { grant: 'client_credentials' })).toMatchObject({ path: '--client-secret-file' });
    expect(failure(base, { 'client-auth': 'client_secret_post' })).toMatchObject({ path: '--client-secret-file' });
    expect(failure(base, { grant: 'token_exchange', 'client-secret-file': '/s' })).toMatchObject({
      path: '--subject-token-file',
    });
    expect(failure({ ...base, token: 'id_token' }, { 'client-secret-file': '/s' })).toMatchObject({
      path: '$.spec.cluster.config.token',
      message: expect.stringContaining('no ID token'),
    });
    expect(failure({ issuerURL: 'https://op.test', clientID: 'c' }, { 'client-secret-file': '/s' })).toMatchObject({
      path: '$.spec.cluster.config.audience',
    });
    expect(failure(base, { 'redirect-port': 'eighty' })).toMatchObject({ path: '--redirect-port' });
  });

  it('cache key: different identity inputs never share an entry; device and code logins of one person do', () => {
    const key = (config: object, flags: Partial<FlagValues<OidcFlags>> = {}, interactive = false) =>
      JSON.stringify(oidcCacheKey(parseOidcSettings(input(config, interactive), { ...noFlags, ...flags })));
    const a = key(base, { 'client-secret-file': '/s' });
    expect(key({ ...base, audience: 'https://other.test' }, { 'client-secret-file': '/s' })).not.toBe(a);
    expect(key({ ...base, clientID: 'd' }, { 'client-secret-file': '/s' })).not.toBe(a);
    expect(key(base, { 'client-secret-file': '/other' })).not.toBe(a);
    expect(key(base, { 'client-secret-file': '/s' }, true)).toBe(a);
    const people = { issuerURL: 'https://op.test', clientID: 'cli' };
    expect(key(people, { grant: 'device_code' }, true)).toBe(key(people, {}, true));
  });
});

describe('parseOidcSettings: proxy credentials stay out of errors', () => {
  it.each(['socks5://alice:hunter2pw@proxy.test:1080', 'http//alice:hunter2pw@proxy.test:3128'])(
    'a refused HTTPS_PROXY %s is named without its password',
    (proxy) => {
      let error: { code?: string; message?: string; hint?: string } = {};
      try {
        parseOidcSettings(input(base), { ...noFlags, 'client-secret-file': '/s' }, { HTTPS_PROXY: proxy });
      } catch (e) {
        error = e as typeof error;
      }
      expect(error.code).toBe('ERR_OIDC_CONFIG');
      expect(error.message).toContain('proxy.test');
      expect(`${error.message} ${error.hint}`).not.toContain('hunter2pw');
    },
  );
});

describe('parseOidcSettings: token exchange settings for real OPs', () => {
  const exchangeFlags = { ...noFlags, 'subject-token-file': '/t' };

  it('subjectTokenType from the cluster, the flag over it, the RFC 8693 jwt type by default', () => {
    expect(parseOidcSettings(input(base), exchangeFlags).subjectTokenType).toBe('urn:ietf:params:oauth:token-type:jwt');
    const dex = { ...base, subjectTokenType: 'urn:ietf:params:oauth:token-type:id_token' };
    expect(parseOidcSettings(input(dex), exchangeFlags).subjectTokenType).toBe(
      'urn:ietf:params:oauth:token-type:id_token',
    );
    expect(parseOidcSettings(input(dex), { ...exchangeFlags, 'subject-token-type': 'urn:x:y' }).subjectTokenType).toBe(
      'urn:x:y',
    );
    expect(failure({ ...base, subjectTokenType: 'id_token' })).toMatchObject({
      code: 'ERR_OIDC_CONFIG',
      path: '$.spec.cluster.config.subjectTokenType',
    });
    expect(failure(base, { 'subject-token-type': 'not a uri' })).toMatchObject({
      code: 'ERR_OIDC_CONFIG',
      path: '--subject-token-type',
    });
  });

  it('tokenParams from the cluster, each --token-param NAME=VALUE over it', () => {
    const config = { ...base, tokenParams: { connector_id: 'kubernetes', tenant: 'a' } };
    expect(parseOidcSettings(input(config), exchangeFlags).tokenParams).toEqual({
      connector_id: 'kubernetes',
      tenant: 'a',
    });
    expect(
      parseOidcSettings(input(config), { ...exchangeFlags, 'token-param': ['connector_id=github', 'x=a=b'] })
        .tokenParams,
    ).toEqual({ connector_id: 'github', tenant: 'a', x: 'a=b' });
    expect(parseOidcSettings(input(base), exchangeFlags).tokenParams).toEqual({});
  });

  it('refuses a parameter the plugin sets itself, a bad name or value, a flag that is not NAME=VALUE', () => {
    expect(failure({ ...base, tokenParams: { scope: 'x' } })).toMatchObject({
      code: 'ERR_OIDC_CONFIG',
      path: '$.spec.cluster.config.tokenParams.scope',
      message: expect.stringContaining('set by the plugin'),
    });
    expect(failure({ ...base, tokenParams: { client_secret: 'x' } })).toMatchObject({
      path: '$.spec.cluster.config.tokenParams.client_secret',
    });
    expect(failure({ ...base, tokenParams: { 'a b': 'x' } })).toMatchObject({
      path: '$.spec.cluster.config.tokenParams["a b"]',
    });
    expect(failure({ ...base, tokenParams: { connector_id: 7 } })).toMatchObject({
      path: '$.spec.cluster.config.tokenParams.connector_id',
    });
    expect(failure({ ...base, tokenParams: ['connector_id=x'] })).toMatchObject({
      path: '$.spec.cluster.config.tokenParams',
    });
    expect(failure(base, { 'token-param': ['connector_id'] })).toMatchObject({ path: '--token-param' });
    expect(failure(base, { 'token-param': ['=x'] })).toMatchObject({ path: '--token-param' });
    expect(failure(base, { 'token-param': ['grant_type=password'] })).toMatchObject({ path: '--token-param' });
  });

  it('--client-auth given or not (then discovery chooses); --login-timeout unset by default (the device code lives as the OP says)', () => {
    expect(parseOidcSettings(input(base), { ...noFlags, 'client-secret-file': '/s' })).toMatchObject({
      clientAuthGiven: false,
      loginTimeoutMs: undefined,
    });
    expect(
      parseOidcSettings(input(base), {
        ...noFlags,
        'client-secret-file': '/s',
        'client-auth': 'client_secret_basic',
        'login-timeout': '90',
      }),
    ).toMatchObject({
      clientAuthGiven: true,
      loginTimeoutMs: 90_000,
    });
  });

  it('cache key: tokenParams and subjectTokenType are part of the identity; without tokenParams the key is what it was', () => {
    const key = (config: object, flags: Partial<FlagValues<OidcFlags>> = {}) =>
      oidcCacheKey(parseOidcSettings(input(config), { ...exchangeFlags, ...flags })) as Record<string, unknown>;
    expect(key(base)).not.toHaveProperty('tokenParams');
    expect(key({ ...base, tokenParams: { connector_id: 'a' } })).not.toEqual(
      key({ ...base, tokenParams: { connector_id: 'b' } }),
    );
    expect(key({ ...base, tokenParams: { a: '1', b: '2' } })).toEqual(key(base, { 'token-param': ['b=2', 'a=1'] }));
    expect(key({ ...base, subjectTokenType: 'urn:a:b' })).not.toEqual(key(base));
  });
});
