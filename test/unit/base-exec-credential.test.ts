import { describe, expect, it } from 'vitest';
import {
  assertUsableStatus,
  formatTimestamp,
  parseTimestamp,
  readExecInfo,
  renderExecCredential,
} from '../../src/base/exec-credential.js';
import { validateDocument } from '../../src/schemas/index.js';

const V1 = 'client.authentication.k8s.io/v1';
const V1BETA1 = 'client.authentication.k8s.io/v1beta1';

describe('readExecInfo', () => {
  it('reads v1 and v1beta1 with the cluster', () => {
    for (const apiVersion of [V1, V1BETA1]) {
      const cluster = {
        server: 'https://a:6443',
        'certificate-authority-data': 'Q0E=',
        config: { issuerURL: 'https://i' },
      };
      const input = readExecInfo(
        {
          KUBERNETES_EXEC_INFO: JSON.stringify({
            kind: 'ExecCredential',
            apiVersion,
            spec: { interactive: true, cluster },
          }),
        },
        () => false,
      );
      expect(input).toEqual({ apiVersion, kind: 'ExecCredential', spec: { interactive: true, cluster } });
    }
  });

  it('without the variable: v1beta1, interactive only from a terminal', () => {
    expect(readExecInfo({}, () => false)).toEqual({
      apiVersion: V1BETA1,
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
    expect(readExecInfo({ KUBERNETES_EXEC_INFO: '' }, () => true).spec.interactive).toBe(true);
  });

  it('an input without spec.interactive is not interactive (spec absent is allowed)', () => {
    expect(
      readExecInfo({ KUBERNETES_EXEC_INFO: JSON.stringify({ kind: 'ExecCredential', apiVersion: V1 }) }, () => true)
        .spec,
    ).toEqual({});
  });

  it.each([
    ['[1]', 'KUBERNETES_EXEC_INFO $.apiVersion'],
    ['{"kind":"ExecCredential","apiVersion":"v1","spec":{}}', 'KUBERNETES_EXEC_INFO $.apiVersion'],
    [JSON.stringify({ kind: 'Pod', apiVersion: V1, spec: {} }), 'KUBERNETES_EXEC_INFO $.kind'],
    [JSON.stringify({ kind: 'ExecCredential', apiVersion: V1, spec: [] }), 'KUBERNETES_EXEC_INFO $.spec'],
    [
      JSON.stringify({ kind: 'ExecCredential', apiVersion: V1, spec: { interactive: 'yes' } }),
      'KUBERNETES_EXEC_INFO $.spec.interactive',
    ],
    [
      JSON.stringify({ kind: 'ExecCredential', apiVersion: V1, spec: { cluster: { server: '' } } }),
      'KUBERNETES_EXEC_INFO $.spec.cluster.server',
    ],
    [
      JSON.stringify({
        kind: 'ExecCredential',
        apiVersion: V1,
        spec: { cluster: { server: 's', 'insecure-skip-tls-verify': 'true' } },
      }),
      "KUBERNETES_EXEC_INFO $.spec.cluster['insecure-skip-tls-verify']",
    ],
    ['nope', 'KUBERNETES_EXEC_INFO'],
  ])('%s → ERR_PLUGIN_EXEC_INFO at %s', (raw, path) => {
    expect(() => readExecInfo({ KUBERNETES_EXEC_INFO: raw }, () => false)).toThrow(
      expect.objectContaining({ code: 'ERR_PLUGIN_EXEC_INFO', path }),
    );
  });
});

describe('renderExecCredential', () => {
  it('renders one line of JSON in the asked apiVersion, only status fields client-go knows', () => {
    const status = { token: 't', expirationTimestamp: '2030-01-01T00:00:00Z', extra: 'x' } as never;
    const text = renderExecCredential(V1, status);
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(text)).toEqual({
      apiVersion: V1,
      kind: 'ExecCredential',
      status: { token: 't', expirationTimestamp: '2030-01-01T00:00:00Z' },
    });
  });

  it.each([
    [{}, 'neither a token nor a certificate and key'],
    [{ clientKeyData: 'k' }, 'only a certificate or a key'],
    [{ token: '' }, 'status.token must be a non-empty string'],
    [{ token: 't', expirationTimestamp: 'tomorrow' }, 'is not an RFC 3339 time'],
  ])('refuses %j: ERR_PLUGIN_BAD_CREDENTIAL', (status, message) => {
    expect(() => assertUsableStatus(status)).toThrow(
      expect.objectContaining({ code: 'ERR_PLUGIN_BAD_CREDENTIAL', message: expect.stringContaining(message) }),
    );
  });

  it('accepts a token with a certificate and key together', () => {
    expect(() => assertUsableStatus({ token: 't', clientCertificateData: 'c', clientKeyData: 'k' })).not.toThrow();
  });
});

describe('formatTimestamp', () => {
  it('writes what Date#toISOString writes (whole seconds on request), and parseTimestamp reads it back', () => {
    // The epoch, a leap day, now-ish with milliseconds, the first instant of year 0 and the last of 9999, and random ones.
    const times = [0, 951782400000, 1764068645123, -62167219200000, 253402300799999];
    for (let i = 0; i < 200; i++) times.push(Math.floor(Math.random() * 253402300799999));
    for (const ms of times) {
      const iso = new Date(ms).toISOString();
      expect(formatTimestamp(ms), iso).toBe(iso);
      expect(formatTimestamp(ms, { seconds: true }), iso).toBe(iso.replace(/\.\d{3}Z$/, 'Z'));
      expect(parseTimestamp(formatTimestamp(ms))).toBe(ms);
    }
  });

  it("outside the years 0-9999 gives toISOString's extended year; an invalid time throws as toISOString does", () => {
    expect(formatTimestamp(253402300800000)).toBe('+010000-01-01T00:00:00.000Z');
    expect(formatTimestamp(-62198755200000, { seconds: true })).toBe('-000001-01-01T00:00:00Z');
    expect(() => formatTimestamp(Number.NaN)).toThrow(RangeError);
  });
});

describe('parseTimestamp', () => {
  it('accepts RFC 3339 only', () => {
    expect(parseTimestamp('2030-01-01T00:00:00Z')).toBe(Date.UTC(2030, 0, 1));
    expect(parseTimestamp('2030-01-01T01:00:00.5+01:00')).toBe(Date.UTC(2030, 0, 1) + 500);
    expect(parseTimestamp('2030-01-01')).toBeUndefined();
    expect(parseTimestamp('2030-13-01T00:00:00Z')).toBeUndefined();
  });

  it('checks ranges as Go’s time.Parse(time.RFC3339) does (the differential e2e test compares them)', () => {
    for (const bad of [
      '2030-01-01T24:00:00Z', // hour 24
      '2030-01-01T00:60:00Z',
      '2030-12-31T23:59:60Z', // no leap second
      '2030-02-29T00:00:00Z', // not a leap year
      '1900-02-29T00:00:00Z',
      '2030-04-31T00:00:00Z',
      '2030-00-01T00:00:00Z',
      '2030-01-00T00:00:00Z',
      '2030-01-01T00:00:00+25:00',
      '2030-01-01T00:00:00+01:61',
      '2030-01-01T00:00:00+0100',
      '2030-01-01t00:00:00Z', // lowercase t and z are refused by Go
      '2030-01-01T00:00:00z',
      '2030-01-01T00:00Z',
      '2030-01-01T00:00:00',
      '2030-01-01T00:00:00.Z',
      '+2030-01-01T00:00:00Z',
    ]) {
      expect(parseTimestamp(bad), bad).toBeUndefined();
    }
    expect(parseTimestamp('2000-02-29T00:00:00Z')).toBe(Date.UTC(2000, 1, 29));
    expect(parseTimestamp('2030-01-01T1:00:00Z')).toBe(Date.UTC(2030, 0, 1, 1));
    expect(parseTimestamp('2030-01-01T00:00:00,25Z')).toBe(Date.UTC(2030, 0, 1) + 250);
    expect(parseTimestamp('2030-01-01T00:00:00+24:00')).toBe(Date.UTC(2029, 11, 31));
    expect(parseTimestamp('2030-01-01T00:00:00+01:60')).toBe(Date.UTC(2029, 11, 31, 22));
    expect(parseTimestamp('1969-12-31T23:59:59.9999Z')).toBe(-1);
    expect(parseTimestamp('0000-01-01T00:00:00Z')).toBe(-62167219200000);
  });
});

describe('the hand check of KUBERNETES_EXEC_INFO agrees with schemas/execcredential-input.*.schema.json', () => {
  const cluster = { server: 'https://a:6443' };
  const corpus: unknown[] = [
    { spec: {} },
    { spec: { interactive: false } },
    { spec: { interactive: 'false' } },
    { spec: { interactive: true, cluster } },
    {
      spec: {
        cluster: {
          ...cluster,
          'tls-server-name': 'a',
          'insecure-skip-tls-verify': true,
          'proxy-url': 'http://p',
          'disable-compression': false,
        },
      },
    },
    { spec: { cluster: { ...cluster, 'certificate-authority-data': 'LS0tLS1CRUdJTg==' } } },
    { spec: { cluster: { ...cluster, 'certificate-authority-data': 'LS0t\nLS1C\n' } } },
    { spec: { cluster: { ...cluster, 'certificate-authority-data': '-----BEGIN CERTIFICATE-----' } } },
    { spec: { cluster: { ...cluster, 'certificate-authority-data': 7 } } },
    { spec: { cluster: { ...cluster, config: { anything: ['goes'] } } } },
    { spec: { cluster: { ...cluster, extra: 'ignored' } }, status: {} },
    { spec: { cluster: { server: '' } } },
    { spec: { cluster: {} } },
    { spec: { cluster: { ...cluster, 'insecure-skip-tls-verify': 'yes' } } },
    { spec: { cluster: { ...cluster, 'disable-compression': 1 } } },
    { spec: { cluster: { ...cluster, 'proxy-url': false } } },
    { spec: { cluster: [] } },
    { spec: [] },
    { spec: 'x' },
  ];
  for (const apiVersion of [V1, V1BETA1]) {
    for (const [index, partial] of corpus.entries()) {
      for (const kind of ['ExecCredential', 'Other']) {
        it(`${apiVersion} #${index} kind ${kind}`, () => {
          const document = { kind, apiVersion, ...(partial as object) };
          const schemaOk =
            validateDocument(
              apiVersion.endsWith('/v1') ? 'execcredential-input.v1' : 'execcredential-input.v1beta1',
              document,
            ).length === 0;
          let handOk = true;
          try {
            readExecInfo({ KUBERNETES_EXEC_INFO: JSON.stringify(document) }, () => false);
          } catch {
            handOk = false;
          }
          expect(handOk).toBe(schemaOk);
        });
      }
    }
  }
});

describe('readExecInfo: malformed input is not quoted', () => {
  it('a KUBERNETES_EXEC_INFO that is not JSON fails without echoing it (spec.cluster.config may hold a client secret)', () => {
    const raw = '{"kind":"ExecCredential","spec":{"cluster":{"config":{"clientSecret":cl1ent-s3cret-abcdef}}}}';
    let error: { code?: string; message?: string; cause?: unknown } = {};
    try {
      readExecInfo({ KUBERNETES_EXEC_INFO: raw }, () => false);
    } catch (e) {
      error = e as typeof error;
    }
    expect(error.code).toBe('ERR_PLUGIN_EXEC_INFO');
    expect(error.message).toMatch(/^KUBERNETES_EXEC_INFO is not JSON/);
    expect(error.message).not.toContain('cl1ent');
    expect(String((error.cause as Error | undefined)?.message ?? '')).not.toContain('cl1ent');
  });
});
