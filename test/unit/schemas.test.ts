import { describe, expect, test } from 'vitest';
import { formatError, isCredentialsError, type ErrorCode } from '../../src/base/errors.js';
import { assertDocument, validateDocument } from '../../src/schemas/index.js';
import type { SchemaId, SchemaIssue } from '../../src/schemas/index.js';
import {
  certPem,
  execInput,
  execOutput,
  keyPem,
  referenceProfile,
  referenceProvidersFile,
  upstreamProfileV1alpha1,
  upstreamProfileV1alpha2,
  v1,
  v1beta1,
} from '../helpers/schemas-fixtures.js';

function issues(id: SchemaId, doc: unknown): SchemaIssue[] {
  return [...validateDocument(id, doc)];
}

describe('providers-file: exactly what cluster-inventory-api reads', () => {
  test('accepts the reference example', () => {
    expect(issues('providers-file', referenceProvidersFile())).toEqual([]);
  });

  test.each([
    ['an empty object (upstream NewFromFile test)', {}],
    ['providers: []', { providers: [] }],
    ['providers: null', { providers: null }],
    ['a null entry', { providers: [null] }],
    ['an entry without execConfig (fails only when chosen)', { providers: [{ name: 'a' }] }],
    ['execConfig: null', { providers: [{ name: 'a', execConfig: null }] }],
    [
      'null args, env and items',
      { providers: [{ name: 'a', execConfig: { command: 'c', args: [null, 'x'], env: null } }] },
    ],
    [
      'any policy string (an error only when the extension is present)',
      { providers: [{ name: 'a', profileSourcedCLIArgsPolicy: 'Prepend' }] },
    ],
    [
      'any apiVersion and interactiveMode at load time',
      { providers: [{ name: 'a', execConfig: { apiVersion: 'x', interactiveMode: 'Sometimes' } }] },
    ],
    [
      'unknown keys everywhere (Go ignores them)',
      { version: 2, providers: [{ name: 'a', extra: true, execConfig: { command: 'c', config: { a: 1 } } }] },
    ],
    ['a differently cased key (Go matches case-insensitively)', { Providers: [{ Name: 'a' }] }],
  ])('accepts %s, as Go does', (_name, doc) => {
    expect(issues('providers-file', doc)).toEqual([]);
  });

  test.each([
    ['an array', [], '$', 'must be an object, not an array'],
    ['providers as an object', { providers: {} }, '$.providers', 'must be an array or null, not an object'],
    ['a string entry', { providers: ['a'] }, '$.providers[0]', 'must be an object or null, not a string'],
    ['a numeric name', { providers: [{ name: 1 }] }, '$.providers[0].name', 'must be a string or null, not a number'],
    [
      'args as a string',
      { providers: [{ name: 'a', execConfig: { command: 'c', args: '--x' } }] },
      '$.providers[0].execConfig.args',
      'must be an array or null, not a string',
    ],
    [
      'a numeric env value',
      {
        providers: [
          {},
          {
            name: 'a',
            execConfig: {
              command: 'c',
              env: [
                { name: 'A', value: 'x' },
                { name: 'B', value: 2 },
              ],
            },
          },
        ],
      },
      '$.providers[1].execConfig.env[1].value',
      'must be a string or null, not a number',
    ],
    [
      'provideClusterInfo as a string',
      { providers: [{ name: 'a', execConfig: { command: 'c', provideClusterInfo: 'true' } }] },
      '$.providers[0].execConfig.provideClusterInfo',
      'must be a boolean or null, not a string',
    ],
  ])('rejects %s (Go fails to unmarshal it too)', (_name, doc, path, message) => {
    expect(issues('providers-file', doc)).toEqual([{ path, message }]);
  });
});

describe('exec-config: an entry that can run', () => {
  test('accepts the reference entries', () => {
    for (const provider of referenceProvidersFile().providers) {
      expect(issues('exec-config', provider.execConfig)).toEqual([]);
    }
  });

  test("names a missing command and apiVersion with client-go's words", () => {
    expect(issues('exec-config', {})).toEqual([
      { path: '$.command', message: 'command must be specified to use exec authentication plugin' },
      { path: '$.apiVersion', message: 'apiVersion must be specified to use exec authentication plugin' },
    ]);
  });

  test('rejects an empty command and an unknown apiVersion, showing the value', () => {
    expect(issues('exec-config', { command: '', apiVersion: 'client.authentication.k8s.io/v1alpha1' })).toEqual([
      { path: '$.command', message: 'must not be empty' },
      {
        path: '$.apiVersion',
        message:
          'must be one of "client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1" (got "client.authentication.k8s.io/v1alpha1")',
      },
    ]);
  });
});

describe('execcredential-output: what a plugin prints, with client-go rules', () => {
  const ids = [
    ['execcredential-output.v1', v1],
    ['execcredential-output.v1beta1', v1beta1],
  ] as const;

  test.each(ids)('%s accepts a token, a cert/key pair, both, with or without expiry', (id, apiVersion) => {
    for (const status of [
      { token: 't' },
      { clientCertificateData: certPem, clientKeyData: keyPem },
      {
        token: 't',
        clientCertificateData: certPem,
        clientKeyData: keyPem,
        expirationTimestamp: '2026-11-22T10:00:00Z',
      },
      { token: 't', expirationTimestamp: '2024-02-29T23:59:59.123456789-07:00' },
      { token: 't', expirationTimestamp: '2026-11-22T10:00:00.1234567890123Z' }, // Go drops sub-nanoseconds
      { token: 't', expirationTimestamp: '2026-11-22T10:00:00,5+05:30' },
      { token: 't', expirationTimestamp: null },
      { token: 't', clientCertificateData: '', clientKeyData: '' },
      { token: 't', clientCertificateData: null, clientKeyData: null }, // Go reads null as ""
      { token: null, clientCertificateData: certPem, clientKeyData: keyPem },
    ]) {
      expect(issues(id, execOutput(status, apiVersion)), JSON.stringify(status)).toEqual([]);
    }
    // client-go decodes leniently: extra fields (spec echoed back, future fields) are fine.
    expect(issues(id, { ...execOutput({ token: 't', future: 1 }, apiVersion), spec: { interactive: false } })).toEqual(
      [],
    );
  });

  test.each([
    [undefined, '$.status', "exec plugin didn't return a status field"],
    [{}, '$.status', "exec plugin didn't return a token or cert/key pair"],
    [{ token: '' }, '$.status', "exec plugin didn't return a token or cert/key pair"],
    [{ token: null }, '$.status', "exec plugin didn't return a token or cert/key pair"],
    [
      { token: 't', clientCertificateData: certPem, clientKeyData: null },
      '$.status',
      'exec plugin returned only certificate or key, not both',
    ],
    [{ expirationTimestamp: '2026-11-22T10:00:00Z' }, '$.status', "exec plugin didn't return a token or cert/key pair"],
    [{ clientCertificateData: certPem }, '$.status', 'exec plugin returned only certificate or key, not both'],
    [{ token: 't', clientKeyData: keyPem }, '$.status', 'exec plugin returned only certificate or key, not both'],
    [
      { token: 't', clientKeyData: keyPem, clientCertificateData: '' },
      '$.status',
      'exec plugin returned only certificate or key, not both',
    ],
    [{ token: 5 }, '$.status.token', 'must be a string or null, not a number'],
    ['ok', '$.status', 'must be an object, not a string'],
  ])('rejects status %j at %s', (status, path, message) => {
    const doc = status === undefined ? { apiVersion: v1, kind: 'ExecCredential' } : execOutput(status);
    expect(issues('execcredential-output.v1', doc)).toEqual([{ path, message }]);
  });

  test.each([
    '2026-11-22 10:00:00Z', // Go's RFC3339 needs the T
    '2026-11-22t10:00:00z',
    '2026-11-22T10:00:00', // no offset
    '2026-02-29T00:00:00Z', // not a leap year
    '2026-04-31T00:00:00Z',
    '2026-12-31T23:59:60Z', // Go refuses leap seconds
    '2026-11-22T24:00:00Z',
    '2026-11-22T10:00:00+24:00',
    '',
    'tomorrow',
  ])('rejects expirationTimestamp %j as Go does', (timestamp) => {
    expect(issues('execcredential-output.v1', execOutput({ token: 't', expirationTimestamp: timestamp }))).toEqual([
      { path: '$.status.expirationTimestamp', message: 'must be an RFC 3339 date-time such as 2026-01-02T15:04:05Z' },
    ]);
  });

  test('names the wrong apiVersion and kind with the values received', () => {
    expect(issues('execcredential-output.v1', { ...execOutput({ token: 't' }, v1beta1), kind: 'Status' })).toEqual([
      {
        path: '$.apiVersion',
        message: 'must be "client.authentication.k8s.io/v1" (got "client.authentication.k8s.io/v1beta1")',
      },
      { path: '$.kind', message: 'must be "ExecCredential" (got "Status")' },
    ]);
  });
});

describe('execcredential-input: KUBERNETES_EXEC_INFO', () => {
  test.each([
    ['execcredential-input.v1', v1],
    ['execcredential-input.v1beta1', v1beta1],
  ] as const)('%s accepts what client-go sends, with and without cluster info', (id, apiVersion) => {
    expect(issues(id, execInput(apiVersion))).toEqual([]);
    expect(issues(id, { kind: 'ExecCredential', apiVersion, spec: { interactive: true } })).toEqual([]);
    // Older clients may leave spec.interactive out; newer ones may add fields.
    expect(issues(id, { kind: 'ExecCredential', apiVersion, spec: { future: {} } })).toEqual([]);
  });

  test('rejects a document without spec, a cluster without server, bad CA data and a string interactive', () => {
    expect(issues('execcredential-input.v1', { kind: 'ExecCredential', apiVersion: v1 })).toEqual([
      { path: '$.spec', message: 'is required' },
    ]);
    const doc = execInput();
    delete doc.spec.cluster.server;
    doc.spec.cluster['certificate-authority-data'] = '-----BEGIN CERTIFICATE-----';
    doc.spec.interactive = 'no';
    expect(issues('execcredential-input.v1', doc)).toEqual([
      { path: '$.spec.interactive', message: 'must be a boolean, not a string' },
      { path: '$.spec.cluster.server', message: 'is required' },
      { path: "$.spec.cluster['certificate-authority-data']", message: 'must be base64 (of the PEM CA bundle)' },
    ]);
  });

  test('a v1beta1 document is not a v1 input', () => {
    expect(issues('execcredential-input.v1', execInput(v1beta1))).toEqual([
      {
        path: '$.apiVersion',
        message: 'must be "client.authentication.k8s.io/v1" (got "client.authentication.k8s.io/v1beta1")',
      },
    ]);
  });
});

describe('clusterprofile.v1alpha1', () => {
  test('accepts the reference example and an upstream-style profile with both provider lists', () => {
    expect(issues('clusterprofile.v1alpha1', referenceProfile())).toEqual([]);
    expect(issues('clusterprofile.v1alpha1', upstreamProfileV1alpha1())).toEqual([]);
  });

  test('the file validator lets two providers share a name (the API server refuses it: upstream v0.1.0 keys accessProviders by name); resolution uses the last, as the map upstream builds does', () => {
    const profile = referenceProfile();
    profile.status.accessProviders.push(structuredClone(profile.status.accessProviders[0]));
    expect(issues('clusterprofile.v1alpha1', profile)).toEqual([]);
  });

  test('rejects what the upstream CRD rejects, naming each path', () => {
    const profile = upstreamProfileV1alpha1();
    delete profile.spec.clusterManager;
    profile.status.credentialProviders[0].cluster = { 'tls-server-name': 'x' };
    profile.status.accessProviders[0].cluster.extensions.push({
      name: 'clusterprofiles.multicluster.x-k8s.io/exec/additional-args',
      extension: ['--a'],
    });
    profile.status.accessProviders[1].cluster['insecure-skip-tls-verify'] = 'true';
    profile.status.conditions[0].status = 'Yes';
    profile.status.properties[0].value = '';
    expect(issues('clusterprofile.v1alpha1', profile)).toEqual([
      { path: '$.spec.clusterManager', message: 'is required' },
      { path: '$.status.conditions[0].status', message: 'must be one of "True", "False", "Unknown" (got "Yes")' },
      { path: '$.status.properties[0].value', message: 'must not be empty' },
      { path: '$.status.credentialProviders[0].cluster.server', message: 'is required' },
      {
        path: '$.status.accessProviders[0].cluster.extensions[1].extension',
        message: 'must be an object, not an array',
      },
      {
        path: "$.status.accessProviders[1].cluster['insecure-skip-tls-verify']",
        message: 'must be a boolean, not a string',
      },
    ]);
  });

  test('requires apiVersion, kind, metadata.name and spec', () => {
    expect(issues('clusterprofile.v1alpha1', { metadata: {} })).toEqual([
      { path: '$.apiVersion', message: 'is required' },
      { path: '$.kind', message: 'is required' },
      { path: '$.spec', message: 'is required' },
      { path: '$.metadata.name', message: 'is required' },
    ]);
  });
});

describe('clusterprofile.v1alpha2', () => {
  function withCluster(cluster: Record<string, unknown>): Record<string, any> {
    const profile = upstreamProfileV1alpha2();
    profile.status.accessProviders = [{ name: 'p', cluster }];
    return profile;
  }

  test('accepts an upstream-style v1alpha2 profile and the reference example at v1alpha2', () => {
    expect(issues('clusterprofile.v1alpha2', upstreamProfileV1alpha2())).toEqual([]);
    expect(
      issues('clusterprofile.v1alpha2', { ...referenceProfile(), apiVersion: 'multicluster.x-k8s.io/v1alpha2' }),
    ).toEqual([]);
  });

  test('refuses credentialProviders, which v1alpha2 removed, and a v1alpha1 apiVersion', () => {
    const profile = upstreamProfileV1alpha1();
    expect(issues('clusterprofile.v1alpha2', profile)).toEqual([
      {
        path: '$.apiVersion',
        message: 'must be "multicluster.x-k8s.io/v1alpha2" (got "multicluster.x-k8s.io/v1alpha1")',
      },
      {
        path: '$.status.credentialProviders',
        message:
          'is not part of multicluster.x-k8s.io/v1alpha2 (it was deprecated in v1alpha1): use status.accessProviders',
      },
    ]);
  });

  test.each([
    'https://api.example.com',
    'https://10.0.0.3:6443',
    'https://[2001:db8::1]:6443/prefix',
    'http://user@host:8080/path?q=1',
    'unix://socket-host',
  ])('accepts server %s', (server) => {
    expect(issues('clusterprofile.v1alpha2', withCluster({ server }))).toEqual([]);
  });

  test.each(['', 'api.example.com:6443', 'https://', 'https:///path', '/relative', 'https://host name'])(
    'rejects server %j: it needs a URL with a host',
    (server) => {
      expect(issues('clusterprofile.v1alpha2', withCluster({ server }))).toEqual([
        {
          path: '$.status.accessProviders[0].cluster.server',
          message: 'server must be a valid absolute URL with a host',
        },
      ]);
    },
  );

  test('rejects a server longer than 2048 characters', () => {
    const server = `https://example.com/${'a'.repeat(2029)}`;
    expect(server.length).toBe(2049);
    expect(issues('clusterprofile.v1alpha2', withCluster({ server }))).toEqual([
      {
        path: '$.status.accessProviders[0].cluster.server',
        message: 'must be at most 2048 characters long (it has 2049)',
      },
    ]);
  });

  test.each([
    ['http://proxy:3128', true],
    ['HTTPS://proxy.example.com', true],
    ['socks5://127.0.0.1:1080', true],
    ['', true],
    ['ftp://proxy', false],
    ['socks4://proxy', false],
    ['proxy:3128', false],
    ['http://', false],
  ])('proxy-url %j valid: %s', (proxyUrl, valid) => {
    const result = issues('clusterprofile.v1alpha2', withCluster({ server: 'https://a', 'proxy-url': proxyUrl }));
    expect(result).toEqual(
      valid
        ? []
        : [
            {
              path: "$.status.accessProviders[0].cluster['proxy-url']",
              message: 'proxy-url must be a valid URL with scheme http, https, or socks5 and a host',
            },
          ],
    );
  });

  test('allows at most 64 access providers', () => {
    const profile = upstreamProfileV1alpha2();
    profile.status.accessProviders = Array.from({ length: 64 }, (_, index) => ({
      name: `p${index}`,
      cluster: { server: 'https://a' },
    }));
    expect(issues('clusterprofile.v1alpha2', profile)).toEqual([]);
    profile.status.accessProviders.push({ name: 'p64', cluster: { server: 'https://a' } });
    expect(issues('clusterprofile.v1alpha2', profile)).toEqual([
      { path: '$.status.accessProviders', message: 'must have at most 64 items (it has 65)' },
    ]);
  });

  test('enforces the list-map keys: provider and extension names, property names, condition types', () => {
    const profile = upstreamProfileV1alpha2();
    profile.status.accessProviders.push({ name: 'token-request', cluster: { server: 'https://b' } });
    profile.status.accessProviders[0].cluster.extensions.push({
      name: 'client.authentication.k8s.io/exec',
      extension: {},
    });
    profile.status.properties.push({ name: 'location', value: 'us' });
    profile.status.conditions.push({ ...profile.status.conditions[0] });
    expect(issues('clusterprofile.v1alpha2', profile)).toEqual([
      {
        path: '$.status.conditions[1]',
        message: 'has the same type as $.status.conditions[0] (the list is keyed by type)',
      },
      {
        path: '$.status.properties[1]',
        message: 'has the same name as $.status.properties[0] (the list is keyed by name)',
      },
      {
        path: '$.status.accessProviders[0].cluster.extensions[1]',
        message: 'has the same name as $.status.accessProviders[0].cluster.extensions[0] (the list is keyed by name)',
      },
      {
        path: '$.status.accessProviders[2]',
        message: 'has the same name as $.status.accessProviders[0] (the list is keyed by name)',
      },
    ]);
  });

  test('requires a cluster on each provider, non-empty names and a label-value cluster manager name', () => {
    const profile = upstreamProfileV1alpha2();
    profile.spec.clusterManager.name = 'not a label value!';
    profile.status.accessProviders = [{ name: '' }];
    expect(issues('clusterprofile.v1alpha2', profile)).toEqual([
      { path: '$.spec.clusterManager.name', message: 'must be a valid Kubernetes label value' },
      { path: '$.status.accessProviders[0].cluster', message: 'is required' },
      { path: '$.status.accessProviders[0].name', message: 'must not be empty' },
    ]);
  });
});

describe('JSON paths', () => {
  function labelIssuePath(key: string): string | undefined {
    const profile = referenceProfile();
    profile.metadata.labels = { [key]: 1 };
    return validateDocument('clusterprofile.v1alpha1', profile)[0]?.path;
  }

  test.each([
    ['app', '$.metadata.labels.app'],
    ['_x9', '$.metadata.labels._x9'],
    ['x-k8s.io/cluster-manager', "$.metadata.labels['x-k8s.io/cluster-manager']"],
    ['0', "$.metadata.labels['0']"],
    ['a~b', "$.metadata.labels['a~b']"],
    ['~1', "$.metadata.labels['~1']"],
    ["it's", "$.metadata.labels['it\\'s']"],
    ['back\\slash', "$.metadata.labels['back\\\\slash']"],
    ['', "$.metadata.labels['']"],
  ])('a member named %j is written %s', (key, path) => {
    expect(labelIssuePath(key)).toBe(path);
  });

  test('array indexes are brackets, the root is $', () => {
    expect(issues('providers-file', { providers: [{}, {}, { name: false }] })[0]?.path).toBe('$.providers[2].name');
    expect(issues('providers-file', 'text')).toEqual([{ path: '$', message: 'must be an object, not a string' }]);
  });

  test('an unknown property is named in the path where a schema forbids unknown keys', () => {
    // tenant-cert-nonce-request (the tenant-cert issuer's request body) is closed: additionalProperties false.
    const signed = {
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      timestamp: '2026-03-01T12:00:00Z',
      signature: 'AAAA',
    };
    expect(issues('tenant-cert-nonce-request', { ...signed, 'extra key': 1, extra: 2 })).toEqual([
      { path: "$['extra key']", message: 'is not a known property here' },
      { path: '$.extra', message: 'is not a known property here' },
    ]);
  });

  test('a missing property is named in the path', () => {
    const profile = referenceProfile();
    delete profile.status.accessProviders[0].name;
    expect(issues('clusterprofile.v1alpha1', profile)).toEqual([
      { path: '$.status.accessProviders[0].name', message: 'is required' },
    ]);
  });
});

describe('validateDocument', () => {
  test('never throws for any input and returns frozen issues', () => {
    for (const doc of [
      undefined,
      null,
      0,
      Number.NaN,
      '',
      'x',
      true,
      [],
      [[]],
      { providers: [[]] },
      Object.create(null),
    ]) {
      const result = validateDocument('providers-file', doc);
      expect(Object.isFrozen(result)).toBe(true);
    }
    expect(validateDocument('providers-file', {})).toEqual([]);
  });

  test('an unknown schema id is a programming error', () => {
    expect(() => validateDocument('no-such-schema' as SchemaId, {})).toThrow(TypeError);
    expect(() => validateDocument('toString' as SchemaId, {})).toThrow(TypeError);
  });

  test('does not change the document', () => {
    const profile = upstreamProfileV1alpha2();
    const before = structuredClone(profile);
    validateDocument('clusterprofile.v1alpha2', profile);
    validateDocument('clusterprofile.v1alpha1', profile);
    expect(profile).toEqual(before);
  });
});

describe('assertDocument', () => {
  test('returns the very document when it is valid', () => {
    const file = referenceProvidersFile();
    expect(assertDocument('providers-file', file, { code: 'ERR_X' as ErrorCode, what: 'providers file' })).toBe(file);
  });

  test('throws a CredentialsError with the code, the first path and every issue in the message', () => {
    let caught: unknown;
    try {
      assertDocument(
        'exec-config',
        { command: 1 },
        { code: 'ERR_EXEC_CONFIG_INVALID', what: 'exec config of provider "a"' },
      );
    } catch (error) {
      caught = error;
    }
    expect(isCredentialsError(caught)).toBe(true);
    expect(caught).toMatchObject({
      code: 'ERR_EXEC_CONFIG_INVALID',
      path: '$.apiVersion',
      message:
        'exec config of provider "a" is invalid: $.apiVersion: apiVersion must be specified to use exec authentication plugin; $.command: must be a string, not a number',
    });
    expect(formatError(caught)).toBe(
      'ERR_EXEC_CONFIG_INVALID: exec config of provider "a" is invalid: $.apiVersion: apiVersion must be specified to use exec authentication plugin; $.command: must be a string, not a number (at $.apiVersion)',
    );
  });

  test('spells out five issues and counts the rest', () => {
    const env = Array.from({ length: 8 }, (_, index) => ({ name: index, value: 'v' }));
    expect(() =>
      assertDocument(
        'providers-file',
        { providers: [{ name: 'a', execConfig: { env } }] },
        { code: 'ERR_Y' as ErrorCode, what: 'providers file f.json' },
      ),
    ).toThrow(
      'providers file f.json is invalid: $.providers[0].execConfig.env[0].name: must be a string or null, not a number; ' +
        '$.providers[0].execConfig.env[1].name: must be a string or null, not a number; ' +
        '$.providers[0].execConfig.env[2].name: must be a string or null, not a number; ' +
        '$.providers[0].execConfig.env[3].name: must be a string or null, not a number; ' +
        '$.providers[0].execConfig.env[4].name: must be a string or null, not a number; and 3 more',
    );
  });
});
