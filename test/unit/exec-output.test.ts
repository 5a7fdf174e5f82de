import { beforeAll, describe, expect, it } from 'vitest';
import { parseExecCredential } from '../../src/exec/output.js';
import { createTestCa, certFingerprint, type KeyPairPem } from '../helpers/tls.js';

const V1 = 'client.authentication.k8s.io/v1';
const V1B1 = 'client.authentication.k8s.io/v1beta1';
const out = (status: unknown, apiVersion: string = V1) =>
  JSON.stringify({ apiVersion, kind: 'ExecCredential', status });

function error(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (e) {
    return e as { code: string; message: string };
  }
  throw new Error('expected an error');
}

describe('parseExecCredential: client-go rules and error texts', () => {
  let pair: KeyPairPem;
  let other: KeyPairPem;
  beforeAll(async () => {
    const ca = await createTestCa();
    pair = await ca.issueClientCert('alice');
    other = await ca.issueClientCert('bob');
  });

  it('accepts a token with an RFC 3339 expiry', () => {
    const c = parseExecCredential(out({ token: 'abc', expirationTimestamp: '2030-01-02T03:04:05Z' }), V1);
    expect(c.token).toBe('abc');
    expect(c.expiresAt).toBe(Date.UTC(2030, 0, 2, 3, 4, 5));
    expect(c.status).toEqual({ token: 'abc', expirationTimestamp: '2030-01-02T03:04:05Z' });
  });

  it('accepts YAML output, as client-go does', () => {
    const c = parseExecCredential(`apiVersion: ${V1B1}\nkind: ExecCredential\nstatus:\n  token: from-yaml\n`, V1B1);
    expect(c.token).toBe('from-yaml');
    expect(c.expiresAt).toBeUndefined();
  });

  it('accepts a certificate/key pair (raw PEM) and fingerprints it; token and cert together are allowed', () => {
    const c = parseExecCredential(out({ token: 't', clientCertificateData: pair.cert, clientKeyData: pair.key }), V1);
    expect(c.clientCertificate).toBe(pair.cert);
    expect(c.certificateFingerprint).toBe(certFingerprint(pair.cert));
    expect(c.token).toBe('t');
  });

  it.each([
    ['garbage', '{ this is : not [ json', /^decoding stdout: /],
    ['empty output', '', /^decoding stdout: /],
    [
      'another kind',
      JSON.stringify({ apiVersion: V1, kind: 'Secret', status: { token: 'x' } }),
      /^decoding stdout: unexpected kind "Secret"/,
    ],
    [
      'no apiVersion',
      JSON.stringify({ kind: 'ExecCredential', status: { token: 'x' } }),
      /^decoding stdout: Object 'apiVersion' is missing/,
    ],
    ['a list', '[1,2]', /^decoding stdout: /],
    ['a number token', out({ token: 5 }), /^decoding stdout: status\.token must be a string/],
    [
      'a bad expiry',
      out({ token: 'x', expirationTimestamp: 'tomorrow' }),
      /^decoding stdout: status\.expirationTimestamp/,
    ],
  ])('rejects %s with a decoding error', (_name, stdout, message) => {
    const e = error(() => parseExecCredential(stdout, V1));
    expect(e.code).toBe('ERR_EXEC_OUTPUT_INVALID');
    expect(e.message).toMatch(message);
  });

  it('accepts a missing, empty or null kind, as client-go does (it takes the kind from the type it decodes into)', () => {
    for (const kind of [undefined, '', null]) {
      expect(parseExecCredential(JSON.stringify({ apiVersion: V1, kind, status: { token: 'x' } }), V1).token).toBe('x');
    }
  });

  it('reads output starting with "{" as JSON only, as client-go does: a YAML flow mapping there is refused', () => {
    const e = error(() => parseExecCredential(`{apiVersion: ${V1}, kind: ExecCredential, status: {token: t}}`, V1));
    expect(e.code).toBe('ERR_EXEC_OUTPUT_INVALID');
    expect(e.message).toMatch(/^decoding stdout: output starts with '\{' but is not JSON/);
    expect(error(() => parseExecCredential(`${out({ token: 'x' })} trailing`, V1)).code).toBe(
      'ERR_EXEC_OUTPUT_INVALID',
    );
  });

  it('reads YAML 1.1 scalars as client-go does: an unquoted yes, on or 0o17 is not a string token', () => {
    for (const token of ['yes', 'on', 'N', '0o17', '1e3']) {
      const e = error(() =>
        parseExecCredential(`apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: ${token}\n`, V1),
      );
      expect(e.message).toMatch(/^decoding stdout: status\.token must be a string/);
    }
    for (const token of ['"yes"', '12:30', '2030-01-01', '0x', '1e999']) {
      const text = parseExecCredential(
        `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: ${token}\n`,
        V1,
      ).token;
      expect(text).toBe(token.replaceAll('"', ''));
    }
  });

  it('takes the first document of a YAML stream, as client-go does; later documents are not read', () => {
    const stream = `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: first\n---\n- garbage: [\n`;
    expect(parseExecCredential(stream, V1).token).toBe('first');
    expect(
      error(() => parseExecCredential(`---\n---\napiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: t\n`, V1))
        .code,
    ).toBe('ERR_EXEC_OUTPUT_INVALID');
  });

  it('reads expirationTimestamp as Go’s time.Parse(time.RFC3339) does', () => {
    const expiry = (timestamp: string) =>
      parseExecCredential(out({ token: 'x', expirationTimestamp: timestamp }), V1).expiresAt;
    expect(expiry('2030-01-01T01:00:00+01:00')).toBe(Date.UTC(2030, 0, 1));
    expect(expiry('2030-01-01T1:00:00Z')).toBe(Date.UTC(2030, 0, 1, 1));
    expect(expiry('2028-02-29T00:00:00,5Z')).toBe(Date.UTC(2028, 1, 29) + 500);
    for (const bad of [
      '2030-01-01T00:00:00',
      '2030-01-01T00:00Z',
      '2030-01-01T24:00:00Z',
      '2030-02-30T00:00:00Z',
      '2030-01-01T00:00:00+0100',
      '2030-01-01t00:00:00Z',
    ]) {
      expect(error(() => expiry(bad)).message).toMatch(
        /^decoding stdout: status\.expirationTimestamp .* is not an RFC 3339 time$/,
      );
    }
  });

  it('checks spec as client-go decodes it: wrong types and CA data Go cannot decode are refused', () => {
    for (const spec of [
      'x',
      { interactive: 'yes' },
      { cluster: [] },
      { cluster: { server: 5 } },
      { cluster: { 'certificate-authority-data': 'QQ' } },
    ]) {
      expect(
        error(() =>
          parseExecCredential(
            JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', spec, status: { token: 'x' } }),
            V1,
          ),
        ).code,
      ).toBe('ERR_EXEC_OUTPUT_INVALID');
    }
    const echoed = {
      interactive: false,
      cluster: { server: 'https://x', 'certificate-authority-data': 'QQ==\n', config: { a: 1 } },
    };
    expect(
      parseExecCredential(
        JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', spec: echoed, status: { token: 'x' } }),
        V1,
      ).token,
    ).toBe('x');
  });

  it('rejects another apiVersion with client-go’s text', () => {
    const e = error(() => parseExecCredential(out({ token: 'x' }, V1B1), V1));
    expect(e.code).toBe('ERR_EXEC_API_VERSION_MISMATCH');
    expect(e.message).toBe(`exec plugin is configured to use API version ${V1}, plugin returned version ${V1B1}`);
  });

  it('rejects a missing status', () => {
    const e = error(() => parseExecCredential(JSON.stringify({ apiVersion: V1, kind: 'ExecCredential' }), V1));
    expect([e.code, e.message]).toEqual(['ERR_EXEC_OUTPUT_INVALID', "exec plugin didn't return a status field"]);
  });

  it('rejects neither token nor cert/key', () => {
    for (const status of [{}, { token: '' }, { expirationTimestamp: '2030-01-01T00:00:00Z' }]) {
      const e = error(() => parseExecCredential(out(status), V1));
      expect([e.code, e.message]).toEqual([
        'ERR_EXEC_OUTPUT_INVALID',
        "exec plugin didn't return a token or cert/key pair",
      ]);
    }
  });

  it('rejects only a certificate or only a key', () => {
    for (const status of [{ clientCertificateData: pair.cert }, { token: 't', clientKeyData: pair.key }]) {
      const e = error(() => parseExecCredential(out(status), V1));
      expect(e.message).toBe('exec plugin returned only certificate or key, not both');
    }
  });

  it('rejects PEM that does not parse, and a key that does not match the certificate', () => {
    const bad = error(() => parseExecCredential(out({ clientCertificateData: 'nope', clientKeyData: 'nope' }), V1));
    expect(bad.code).toBe('ERR_EXEC_OUTPUT_INVALID');
    expect(bad.message).toMatch(/^failed parsing client key\/certificate: /);
    const mismatch = error(() =>
      parseExecCredential(out({ clientCertificateData: pair.cert, clientKeyData: other.key }), V1),
    );
    expect(mismatch.message).toBe('failed parsing client key/certificate: tls: private key does not match public key');
  });
});

describe('parseExecCredential: what a plugin printed stays out of the error', () => {
  it('a bare token on stdout (a command that prints an access token, not an ExecCredential) is not echoed', () => {
    const secret = 'ya29.a0AfB_byC-SECRET-ACCESS-TOKEN';
    for (const printed of [`${secret}\n`, `"${secret}"`, '12345678901234567890']) {
      const e = error(() => parseExecCredential(printed, V1));
      expect(e.code).toBe('ERR_EXEC_OUTPUT_INVALID');
      expect(e.message).toMatch(/^decoding stdout: expected an ExecCredential object, got a (string|number)$/);
      expect(e.message).not.toContain(secret);
    }
  });

  it('an unexpected kind is named only when it is a short word', () => {
    const e = error(() =>
      parseExecCredential(JSON.stringify({ apiVersion: V1, kind: { token: 'sekret-in-kind' } }), V1),
    );
    expect(e.code).toBe('ERR_EXEC_OUTPUT_INVALID');
    expect(e.message).not.toContain('sekret-in-kind');
  });
});

describe('parseExecCredential: hostile YAML', () => {
  it('an alias bomb in plugin output is ERR_EXEC_OUTPUT_INVALID, not a raw yaml error, and quotes nothing', () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 8; i++)
      lines.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(',')}]`,
      );
    lines.push('apiVersion: client.authentication.k8s.io/v1', 'kind: ExecCredential', 'status: {token: s3cret}');
    const e = error(() => parseExecCredential(lines.join('\n'), V1));
    expect(e.code).toBe('ERR_EXEC_OUTPUT_INVALID');
    expect(e.message).toBe('decoding stdout: its aliases expand to more than 100 nodes (an alias bomb?)');
  });
});
