import { describe, expect, test } from 'vitest';
import { parseTokenRequestSettings, type TokenRequestSettings } from '../../src/providers/token-request/settings.js';
import { buildTokenRequest, processTokenRequestResponse } from '../../src/providers/token-request/protocol.js';
import {
  buildSecretRequest,
  parseSecretReaderSettings,
  processSecretResponse,
} from '../../src/providers/token-request/secret-reader.js';

const now = new Date('2026-11-22T10:00:00Z');
const settings: TokenRequestSettings = {
  namespace: 'fleet',
  serviceAccount: 'hub-reader',
  audiences: ['https://kubernetes.default.svc'],
  expirationSeconds: 3600,
};
const server = 'https://10.0.0.3:6443';

function settingsError(config: Record<string, unknown> | undefined, flags = {}) {
  try {
    parseTokenRequestSettings({ config, flags });
  } catch (error) {
    return error as { code: string; message: string; path: string };
  }
  throw new Error('expected an error');
}

describe('token-request settings', () => {
  test('config wins over flags key by key; defaults fill the rest', () => {
    expect(
      parseTokenRequestSettings({
        config: { serviceAccount: 'from-config' },
        flags: { namespace: 'from-flag', serviceAccount: 'ignored', audiences: ['a', 'a', 'b'] },
      }),
    ).toEqual({
      namespace: 'from-flag',
      serviceAccount: 'from-config',
      audiences: ['a', 'b'],
      expirationSeconds: 3600,
    });
  });

  test('expirationSeconds from a flag string is parsed', () => {
    expect(
      parseTokenRequestSettings({
        config: { namespace: 'n', serviceAccount: 's' },
        flags: { expirationSeconds: '600' },
      }).expirationSeconds,
    ).toBe(600);
  });

  test.each([
    [{ serviceAccount: 's' }, 'missing namespace', '--namespace'],
    [{ namespace: 'Fleet', serviceAccount: 's' }, 'not a valid DNS-1123 label', 'spec.cluster.config.namespace'],
    [{ namespace: 'a'.repeat(64), serviceAccount: 's' }, 'not a valid DNS-1123 label', 'spec.cluster.config.namespace'],
    [
      { namespace: 'n', serviceAccount: 'sa_1' },
      'not a valid DNS-1123 subdomain',
      'spec.cluster.config.serviceAccount',
    ],
    [
      { namespace: 'n', serviceAccount: 's', expirationSeconds: 599 },
      'less than 10 minutes',
      'spec.cluster.config.expirationSeconds',
    ],
    [
      { namespace: 'n', serviceAccount: 's', expirationSeconds: 2 ** 32 + 1 },
      'larger than 2^32 seconds',
      'spec.cluster.config.expirationSeconds',
    ],
    [
      { namespace: 'n', serviceAccount: 's', expirationSeconds: 1.5 },
      'whole number',
      'spec.cluster.config.expirationSeconds',
    ],
    [
      { namespace: 'n', serviceAccount: 's', audiences: 'api' },
      'list of non-empty strings',
      'spec.cluster.config.audiences',
    ],
    [
      { namespace: 'n', serviceAccount: 's', boundObjectRef: { kind: 'Deployment', name: 'x' } },
      'Pod, Secret or Node',
      'spec.cluster.config.boundObjectRef.kind',
    ],
  ])('%j is refused: %s', (config, message, path) => {
    const error = settingsError(config);
    expect(error.code).toBe('ERR_TOKEN_REQUEST_SETTINGS');
    expect(error.message).toContain(message);
    expect(error.path).toBe(path);
  });
});

describe('TokenRequest exchange', () => {
  test('the request has the real TokenRequest shape', () => {
    const request = buildTokenRequest({
      ...settings,
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p', uid: 'u-1' },
    });
    expect(request).toEqual({
      method: 'POST',
      path: '/api/v1/namespaces/fleet/serviceaccounts/hub-reader/token',
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: ['https://kubernetes.default.svc'],
          expirationSeconds: 3600,
          boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p', uid: 'u-1' },
        },
      },
    });
  });

  test('a 201 answer gives the token, renewed 80% into its lifetime', () => {
    const minted = processTokenRequestResponse(
      {
        status: 201,
        body: {
          kind: 'TokenRequest',
          apiVersion: 'authentication.k8s.io/v1',
          status: { token: 'eyJ.a.b', expirationTimestamp: '2026-11-22T11:00:00Z' },
        },
      },
      settings,
      { server, now },
    );
    expect(minted.token).toBe('eyJ.a.b');
    expect(minted.expiresAt.toISOString()).toBe('2026-11-22T11:00:00.000Z');
    expect(minted.renewAt.toISOString()).toBe('2026-11-22T10:48:00.000Z');
  });

  test.each([
    [401, 'ERR_TOKEN_REQUEST_UNAUTHORIZED', 'bootstrap credential'],
    [403, 'ERR_TOKEN_REQUEST_FORBIDDEN', 'may not create tokens for service account fleet/hub-reader'],
    [404, 'ERR_TOKEN_REQUEST_NOT_FOUND', 'service account fleet/hub-reader not found'],
    [500, 'ERR_TOKEN_REQUEST_REJECTED', 'HTTP 500'],
  ])('HTTP %i → %s', (status, code, message) => {
    const call = () =>
      processTokenRequestResponse({ status, body: { kind: 'Status', message: 'the server said so' } }, settings, {
        server,
        now,
      });
    expect(call).toThrow(expect.objectContaining({ code, message: expect.stringContaining(message) }));
    expect(call).toThrow(/the server said so/);
  });

  test('403 names the missing permission', () => {
    expect(() => processTokenRequestResponse({ status: 403, body: {} }, settings, { server, now })).toThrow(
      expect.objectContaining({ hint: expect.stringContaining('"create" on resource "serviceaccounts/token"') }),
    );
  });

  test.each([
    ['not json', 'not a JSON object'],
    [{ kind: 'Status' }, 'expected "TokenRequest"'],
    [{ kind: 'TokenRequest' }, 'no status'],
    [{ kind: 'TokenRequest', status: { token: '', expirationTimestamp: '2026-11-22T11:00:00Z' } }, 'status.token'],
    [{ kind: 'TokenRequest', status: { token: 't', expirationTimestamp: 'tomorrow' } }, 'RFC 3339'],
    [{ kind: 'TokenRequest', status: { token: 't', expirationTimestamp: '2026-11-22T09:00:00Z' } }, 'check the clocks'],
  ])('malformed answer %j is refused', (body, message) => {
    expect(() => processTokenRequestResponse({ status: 201, body }, settings, { server, now })).toThrow(
      expect.objectContaining({
        code: 'ERR_TOKEN_REQUEST_RESPONSE_INVALID',
        message: expect.stringContaining(message),
      }),
    );
  });
});

describe('Secret Reader', () => {
  test('reads data.token of <namespace>/<clusterName>', () => {
    const reader = parseSecretReaderSettings({ clusterName: 'spoke-1' }, 'fleet');
    expect(buildSecretRequest(reader)).toEqual({ method: 'GET', path: '/api/v1/namespaces/fleet/secrets/spoke-1' });
    const token = processSecretResponse(
      { status: 200, body: { kind: 'Secret', data: { token: Buffer.from('tok-1').toString('base64') } } },
      reader,
    );
    expect(token).toBe('tok-1');
  });

  test.each([
    [undefined, 'missing ExecCredential.Spec.Cluster.Config'],
    ['x', 'invalid ExecCredential.Spec.Cluster.Config'],
    [{}, 'missing clusterName in ExecCredential.Spec.Cluster.Config'],
    [{ clusterName: 'Bad_Name' }, 'invalid ExecCredential.Spec.Cluster.Config'],
  ])('config %j → upstream text', (config, message) => {
    expect(() => parseSecretReaderSettings(config, 'fleet')).toThrow(
      expect.objectContaining({ code: 'ERR_SECRET_READER_CONFIG', message: expect.stringContaining(message) }),
    );
  });

  test('upstream texts for a missing Secret and a missing key', () => {
    const reader = { namespace: 'fleet', clusterName: 'spoke-1', secretName: 'spoke-1' };
    expect(() =>
      processSecretResponse({ status: 404, body: { kind: 'Status', message: 'secrets "spoke-1" not found' } }, reader),
    ).toThrow('failed to get secret fleet/spoke-1: secrets "spoke-1" not found');
    expect(() =>
      processSecretResponse({ status: 200, body: { kind: 'Secret', data: { other: 'eA==' } } }, reader),
    ).toThrow('secret fleet/spoke-1 missing "token" key');
  });

  test("--managed-serviceaccount reads Open Cluster Management's Secret <clusterName>-<msa>", () => {
    const reader = parseSecretReaderSettings({ clusterName: 'cluster1' }, 'kueue-system', 'kueue-admin');
    expect(buildSecretRequest(reader)).toEqual({
      method: 'GET',
      path: '/api/v1/namespaces/kueue-system/secrets/cluster1-kueue-admin',
    });
    expect(() => parseSecretReaderSettings({ clusterName: 'cluster1' }, 'kueue-system', 'Bad_Msa')).toThrow(
      expect.objectContaining({ code: 'ERR_SECRET_READER_CONFIG', path: '--managed-serviceaccount' }),
    );
  });

  test('a token key holding something other than a bearer token is refused without printing it', () => {
    const reader = parseSecretReaderSettings({ clusterName: 'cluster1' }, 'kueue-system', 'kueue-admin');
    const kubeconfig = 'apiVersion: v1\nkind: Config\nusers: [{name: secret-user}]';
    const respond = () =>
      processSecretResponse(
        { status: 200, body: { kind: 'Secret', data: { token: Buffer.from(kubeconfig).toString('base64') } } },
        reader,
      );
    expect(respond).toThrow(
      expect.objectContaining({
        code: 'ERR_SECRET_READER_NOT_A_TOKEN',
        path: 'secret kueue-system/cluster1-kueue-admin data.token',
      }),
    );
    expect(() => respond()).not.toThrow(/secret-user/);
  });
});
