/**
 * The tenant-cert plugin and `clusterprofile identity import` as real processes, where what is on disk disagrees:
 * - a cache entry whose expirationTimestamp is still ahead but whose certificate has expired (its state's notAfter,
 *   stored when the entry was written, is past) is not served: the plugin obtains a certificate again;
 * - `identity import --kubeconfig` that cannot write the kubeconfig leaves no Identity stored (both or neither).
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createKeyFile,
  createSigner,
  liqoIdentityYaml,
  writeText,
  type TestKey,
  type TestSigner,
} from '../helpers/tenant-cert-plugin.js';
import { CLI, cacheEntries, runNode, runPlugin, type PluginSetup } from '../helpers/tenant-cert-plugin-run.js';

const PROVIDER = 'member-1';
const CONSUMER = 'consumer-1';

let key: TestKey;
let signer: TestSigner;

beforeAll(async () => {
  key = createKeyFile();
  signer = await createSigner('stale-state-ca');
});

function setup(): PluginSetup {
  const dir = mkdtempSync(join(key.dir, 'run-'));
  return {
    clusterID: CONSUMER,
    keyFile: key.file,
    cacheDir: join(dir, 'cache'),
    identityDir: join(dir, 'identities'),
    config: { providerClusterID: PROVIDER },
  };
}

async function importIdentity(s: PluginSetup, certPem: string, extra: readonly string[] = []) {
  const file = writeText(
    mkdtempSync(join(key.dir, 'doc-')),
    'identity.yaml',
    liqoIdentityYaml({ provider: PROVIDER, consumer: CONSUMER, certPem, apiServer: 'https://member.example:6443' }),
  );
  return runNode(CLI, ['identity', 'import', file, '--key-file', key.file, '--identity-dir', s.identityDir, ...extra]);
}

const serialOf = (stdout: string): string =>
  new X509Certificate(
    (JSON.parse(stdout) as { status: { clientCertificateData: string } }).status.clientCertificateData,
  ).serialNumber;

describe('tenant-cert cache hit', () => {
  it('does not serve an entry whose certificate has expired, even with an expirationTimestamp ahead', async () => {
    const s = setup();
    const valid = await signer.issue(key.publicKey, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
    });
    expect((await importIdentity(s, valid)).code).toBe(0);
    const first = await runPlugin(s);
    expect(first.code, first.stderr).toBe(0);
    const [entryFile] = cacheEntries(s.cacheDir);
    const entry = JSON.parse(readFileSync(entryFile ?? '', 'utf8')) as {
      status: { clientCertificateData: string; expirationTimestamp: string };
      state: { notAfter: string };
    };
    // Written with the certificate's notAfter in its state.
    expect(Date.parse(entry.state.notAfter)).toBe(new X509Certificate(valid).validToDate.getTime());

    // The entry now holds an expired certificate (a clock that was wrong when it was written, an edited file),
    // while its expirationTimestamp says a day more.
    const expired = await signer.issue(key.publicKey, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 7_200_000),
      notAfter: new Date(Date.now() - 3_600_000),
    });
    entry.status.clientCertificateData = expired;
    entry.status.expirationTimestamp = new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    entry.state.notAfter = new X509Certificate(expired).validToDate.toISOString();
    writeFileSync(entryFile ?? '', JSON.stringify(entry), { mode: 0o600 });

    const second = await runPlugin(s);
    expect(second.code, second.stderr).toBe(0);
    expect(serialOf(second.stdout)).toBe(new X509Certificate(valid).serialNumber);
    expect(serialOf(second.stdout)).not.toBe(new X509Certificate(expired).serialNumber);
  });

  it('does not serve an entry without the notAfter state (not written by this plugin)', async () => {
    const s = setup();
    const valid = await signer.issue(key.publicKey, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
    });
    expect((await importIdentity(s, valid)).code).toBe(0);
    expect((await runPlugin(s)).code).toBe(0);
    const [entryFile] = cacheEntries(s.cacheDir);
    const entry = JSON.parse(readFileSync(entryFile ?? '', 'utf8')) as {
      status: { clientCertificateData: string };
      state?: unknown;
    };
    const expired = await signer.issue(key.publicKey, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 7_200_000),
      notAfter: new Date(Date.now() - 3_600_000),
    });
    entry.status.clientCertificateData = expired;
    delete entry.state;
    writeFileSync(entryFile ?? '', JSON.stringify(entry), { mode: 0o600 });
    const again = await runPlugin(s);
    expect(again.code, again.stderr).toBe(0);
    expect(serialOf(again.stdout)).toBe(new X509Certificate(valid).serialNumber);
  });
});

describe('clusterprofile identity import --kubeconfig', () => {
  it('stores no Identity when the kubeconfig cannot be written, and says so', async () => {
    const s = setup();
    const valid = await signer.issue(key.publicKey, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
    });
    // A directory where the kubeconfig file should be: the write fails after the Identity's checks passed.
    const target = join(mkdtempSync(join(key.dir, 'out-')), 'member-1.kubeconfig');
    mkdirSync(target);
    const result = await importIdentity(s, valid, ['--kubeconfig', target]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_IDENTITY_KUBECONFIG');
    expect(result.stderr).toContain('the Identity was not stored');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(s.identityDir, CONSUMER, `${PROVIDER}.yaml`))).toBe(false);
    // Nothing to serve either: the plugin has no Identity and no issuer.
    const plugin = await runPlugin(s);
    expect(plugin.code).toBe(1);
    expect(plugin.stderr).toContain('ERR_TENANT_CERT_NO_ISSUER');
  });

  it('keeps the Identity imported before when a re-import cannot write its kubeconfig', async () => {
    const s = setup();
    const first = await signer.issue(key.publicKey, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
    });
    const imported = await importIdentity(s, first);
    expect(imported.code, imported.stderr).toBe(0);
    const stored = readFileSync(imported.stdout.trim(), 'utf8');
    const second = await signer.issue(key.publicKey, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 2 * 86_400_000),
    });
    const target = join(mkdtempSync(join(key.dir, 'out-')), 'missing-dir', 'x', 'member-1.kubeconfig');
    writeFileSync(join(target, '..', '..'), 'a file where a directory should be');
    const result = await importIdentity(s, second, ['--kubeconfig', target]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ERR_IDENTITY_KUBECONFIG');
    expect(result.stderr).toContain('the Identity was not stored');
    expect(readFileSync(imported.stdout.trim(), 'utf8')).toBe(stored);
  });

  it('writes both when it can', async () => {
    const s = setup();
    const valid = await signer.issue(key.publicKey, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
    });
    const target = join(mkdtempSync(join(key.dir, 'out-')), 'member-1.kubeconfig');
    const result = await importIdentity(s, valid, ['--kubeconfig', target]);
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(target)).toBe(true);
    expect(existsSync(result.stdout.trim())).toBe(true);
  });
});
