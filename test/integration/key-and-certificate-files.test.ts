/**
 * Key and certificate files that hold the wrong thing, through the real binaries (child processes): a PEM block that
 * is not a key (a CERTIFICATE in a key file), a "PRIVATE KEY" block whose body is no key, garbage, an empty file, a
 * key where a certificate is expected — for `clusterprofile identity import --key-file`, `clusterprofile tenant
 * generate --key-file`, `clusterprofile issuer serve --tls-cert-file/--tls-key-file`, the issuer data directory's CA
 * key, and the tenant-cert plugin's `--key-file`. Each is refused by the one reader (src/base/pem-file.ts): exit
 * non-zero, nothing on stdout, a bounded stderr with the registered code, the file (and flag) and what was expected,
 * never OpenSSL's `error:1E08010C:DECODER routines::unsupported` text, nothing cached or created.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTestCa } from '../helpers/tls.js';
import { createKeyFile, createSigner, liqoIdentityYaml, type TestKey } from '../helpers/tenant-cert-plugin.js';
import { CLI, runNode, runPlugin, startIssuer, type Result } from '../helpers/tenant-cert-plugin-run.js';

const PROVIDER = 'member-1';
const CONSUMER = 'consumer-1';

let root: string;
let key: TestKey;
let certificatePem: string;
let identityFile: string;
/** The bad contents, by name: what each holds. */
let bad: Record<string, string>;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'cpc-pem-files-'));
  key = createKeyFile();
  const signer = await createSigner('pem-files-ca');
  certificatePem = await signer.issue(key.publicKey, {
    cn: CONSUMER,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
  });
  identityFile = join(root, 'identity.yaml');
  writeFileSync(
    identityFile,
    liqoIdentityYaml({ provider: PROVIDER, consumer: CONSUMER, certPem: certificatePem, apiServer: 'https://m:6443' }),
  );
  const certificateBody = certificatePem.split('\n').slice(1, -2).join('\n');
  bad = {
    certificate: certificatePem,
    'certificate body under a PRIVATE KEY label': `-----BEGIN PRIVATE KEY-----\n${certificateBody}\n-----END PRIVATE KEY-----\n`,
    garbage: 'this is not PEM at all\n',
    empty: '',
  };
});

/** Writes `text` as a 0600 file in a fresh directory. */
function file(name: string, text: string): string {
  const path = join(mkdtempSync(join(root, 'f-')), name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

/** What every refusal shares. */
function refused(result: Result, code: string, path: string, expected: RegExp, exit = 2): void {
  expect(result.code, result.stderr).toBe(exit);
  expect(result.stdout).toBe('');
  expect(result.stderr.length).toBeLessThan(2048);
  expect(result.stderr).toContain(code);
  expect(result.stderr).toContain(path);
  expect(result.stderr).toMatch(expected);
  expect(result.stderr).not.toMatch(/error:[0-9A-F]{8}:|DECODER routines/);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

describe('a private key file that holds no usable key', () => {
  it('clusterprofile identity import --key-file: ERR_TENANT_CERT_KEY_FILE, the file named, no Identity stored', async () => {
    for (const [name, text] of Object.entries(bad)) {
      const keyFile = file('key.pem', text);
      const identityDir = join(root, `ids-${name.replace(/\W+/g, '-')}`);
      const result = await runNode(CLI, [
        'identity',
        'import',
        identityFile,
        '--key-file',
        keyFile,
        '--identity-dir',
        identityDir,
      ]);
      refused(result, 'ERR_TENANT_CERT_KEY_FILE', keyFile, /PKCS#8|PEM private key/);
      expect(existsSync(identityDir), name).toBe(false);
    }
    // What each case found, in words.
    const certificate = await runNode(CLI, [
      'identity',
      'import',
      identityFile,
      '--key-file',
      file('k', bad.certificate!),
    ]);
    expect(certificate.stderr).toContain('it holds a PEM block "CERTIFICATE"');
    const body = await runNode(CLI, [
      'identity',
      'import',
      identityFile,
      '--key-file',
      file('k', bad['certificate body under a PRIVATE KEY label']!),
      '--identity-dir',
      join(root, 'ids-body'),
    ]);
    expect(body.stderr).toMatch(
      /--key-file \S+: expected a PEM private key \(PKCS#8 "PRIVATE KEY", PKCS#1 "RSA PRIVATE KEY" or SEC1 "EC PRIVATE KEY"\), unencrypted, found a "PRIVATE KEY" block that does not decode as one/,
    );
    const empty = await runNode(CLI, ['identity', 'import', identityFile, '--key-file', file('k', '')]);
    expect(empty.stderr).toContain('it holds an empty file');
  });

  it('clusterprofile tenant generate --key-file: the same code and words', async () => {
    const keyFile = file('key.pem', bad['certificate body under a PRIVATE KEY label']!);
    const result = await runNode(CLI, [
      'tenant',
      'generate',
      '--cluster-id',
      CONSUMER,
      '--provider-cluster-id',
      PROVIDER,
      '--nonce',
      'bm9uY2U=',
      '--key-file',
      keyFile,
    ]);
    refused(result, 'ERR_TENANT_CERT_KEY_FILE', keyFile, /found a "PRIVATE KEY" block that does not decode as one/);
  });

  it('the tenant-cert plugin --key-file: exit 2, nothing cached', async () => {
    const keyFile = file('key.pem', bad['certificate body under a PRIVATE KEY label']!);
    const cacheDir = join(root, 'plugin-cache');
    const result = await runPlugin({
      clusterID: CONSUMER,
      keyFile,
      cacheDir,
      identityDir: join(root, 'plugin-ids'),
      config: {
        providerClusterID: PROVIDER,
        issuerURL: 'https://127.0.0.1:1',
        issuerCA: Buffer.from(certificatePem).toString('base64'),
      },
    });
    refused(
      result,
      'ERR_TENANT_CERT_KEY_FILE',
      keyFile,
      /--key-file .*found a "PRIVATE KEY" block that does not decode/,
    );
    expect(existsSync(cacheDir) ? readdirSync(cacheDir).filter((name) => name.endsWith('.json')) : []).toEqual([]);
  });
});

describe('clusterprofile issuer serve with a bad serving pair or CA key', () => {
  const serve = (dataDir: string, extra: readonly string[]) =>
    runNode(CLI, [
      'issuer',
      'serve',
      '--data-dir',
      dataDir,
      '--cluster-id',
      PROVIDER,
      '--listen',
      '127.0.0.1:0',
      ...extra,
    ]);

  it('--tls-key-file / --tls-cert-file holding the wrong thing: ERR_ISSUER_CONFIG naming the flag and file, nothing made', async () => {
    const ca = await createTestCa('pem-files-serving-ca');
    const pair = await ca.issueServerCert({ ips: ['127.0.0.1'] });
    const cert = file('tls.crt', pair.cert);
    const keyFile = file('tls.key', pair.key);
    const cases: [string, string, string, RegExp][] = [
      ['--tls-key-file', 'a certificate', pair.cert, /expected a PEM private key .*found a PEM block "CERTIFICATE"/],
      ['--tls-key-file', 'garbage', 'garbage\n', /expected a PEM private key .*found no PEM block/],
      ['--tls-key-file', 'empty', '', /expected a PEM private key .*found an empty file/],
      [
        '--tls-key-file',
        'a certificate body under a PRIVATE KEY label',
        bad['certificate body under a PRIVATE KEY label']!,
        /found a "PRIVATE KEY" block that does not decode as one \(ERR_OSSL_/,
      ],
      [
        '--tls-cert-file',
        'a key',
        pair.key,
        /expected one or more PEM certificates \("CERTIFICATE"\), found a PEM block "PRIVATE KEY"/,
      ],
      ['--tls-cert-file', 'garbage', 'garbage\n', /expected one or more PEM certificates .*found no PEM block/],
      ['--tls-cert-file', 'empty', '', /expected one or more PEM certificates .*found an empty file/],
    ];
    for (const [flag, name, text, words] of cases) {
      const badFile = file(flag === '--tls-key-file' ? 'tls.key' : 'tls.crt', text);
      const dataDir = join(root, `serve-${flag}-${name.replace(/\W+/g, '-')}`);
      const result = await serve(dataDir, [
        '--tls-cert-file',
        flag === '--tls-cert-file' ? badFile : cert,
        '--tls-key-file',
        flag === '--tls-key-file' ? badFile : keyFile,
      ]);
      refused(result, 'ERR_ISSUER_CONFIG', `${flag} ${badFile}`, words, 1);
      // The key's text is never quoted.
      expect(result.stderr).not.toContain(pair.key.split('\n')[1]!);
      expect(existsSync(dataDir), `${flag} ${name}`).toBe(false);
    }
  });

  it('--api-server-ca holding a key: ERR_ISSUER_CONFIG naming the flag and file, nothing made', async () => {
    const caFile = file('api-ca.crt', key.pem);
    const dataDir = join(root, 'serve-api-server-ca');
    const result = await serve(dataDir, ['--api-server-url', 'https://api.example:6443', '--api-server-ca', caFile]);
    refused(result, 'ERR_ISSUER_CONFIG', `--api-server-ca ${caFile}`, /found a PEM block "PRIVATE KEY"/, 1);
    expect(result.stderr).not.toContain(key.pem.split('\n')[1]!);
    expect(existsSync(dataDir)).toBe(false);
  });

  it("the data directory's CA key replaced by a certificate: ERR_ISSUER_DATA_DIR naming the file", async () => {
    const dataDir = join(root, 'data-ca');
    const issuer = await startIssuer(dataDir, PROVIDER);
    await issuer.stop();
    const caKey = join(dataDir, 'client-ca.key');
    writeFileSync(caKey, readFileSync(join(dataDir, 'client-ca.crt')), { mode: 0o600 });
    const result = await serve(dataDir, []);
    refused(result, 'ERR_ISSUER_DATA_DIR', caKey, /expected a PEM private key .*found a PEM block "CERTIFICATE"/, 1);
  });
});
