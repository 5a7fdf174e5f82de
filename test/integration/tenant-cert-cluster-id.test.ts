/**
 * One cluster-ID rule on both sides, with real processes: `clusterprofile issuer serve` / `issuer trust` and the
 * `clusterprofile-tenant-cert` plugin. The longest ID the issuer trusts (63 characters) gets a certificate through
 * the plugin, with that ID as its CN (within X.509's 64-character bound); an ID the issuer refuses — one character
 * longer, upper case, with a dot — is refused by the plugin too, with the same code and flag.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  issuerConfig,
  PLUGIN,
  runNode,
  startIssuer,
  V1,
  execInfo,
  type RunningIssuer,
} from '../helpers/tenant-cert-plugin-run.js';

const PROVIDER = 'member-1';
const LONGEST = `c${'0123456789'.repeat(6)}-z`; // 63 characters

let root: string;
let issuer: RunningIssuer;
let keyFile: string;
let publicKeyFile: string;
let config: Record<string, unknown>;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'cpc-cluster-id-'));
  keyFile = join(root, 'consumer.key');
  publicKeyFile = `${keyFile}.pub`;
  const keygen = await runNode(CLI, ['keygen', '--out', keyFile, '--algorithm', 'ecdsa-p256']);
  expect(keygen.code, keygen.stderr).toBe(0);
  writeFileSync(publicKeyFile, keygen.stdout);
  const dataDir = join(root, 'data');
  issuer = await startIssuer(dataDir, PROVIDER);
  config = issuerConfig(issuer, readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8'), PROVIDER);
});

afterAll(async () => {
  await issuer?.stop();
  rmSync(root, { recursive: true, force: true });
});

const trust = (clusterID: string) =>
  runNode(CLI, [
    'issuer',
    'trust',
    '--data-dir',
    issuer.dataDir,
    '--cluster-id',
    clusterID,
    '--public-key',
    publicKeyFile,
  ]);
const plugin = (clusterID: string) =>
  runNode(
    PLUGIN,
    [
      '--cluster-id',
      clusterID,
      '--key-file',
      keyFile,
      '--cache-dir',
      join(root, 'cache'),
      '--identity-dir',
      join(root, 'identities'),
    ],
    {
      KUBERNETES_EXEC_INFO: execInfo(V1, config),
    },
  );
const codeOf = (stderr: string): string | undefined => /\b(ERR_[A-Z_]+):/.exec(stderr)?.[1];

describe('cluster IDs: the issuer and the plugin agree', () => {
  it('the longest ID the issuer trusts is accepted by the plugin and certified as the CN', async () => {
    expect(LONGEST).toHaveLength(63);
    const trusted = await trust(LONGEST);
    expect(trusted.code, trusted.stderr).toBe(0);
    const result = await plugin(LONGEST);
    expect(result.code, result.stderr).toBe(0);
    const certificate = new X509Certificate(JSON.parse(result.stdout).status.clientCertificateData);
    expect(certificate.subject.split('\n')).toContain(`CN=${LONGEST}`);
  });

  it.each([
    ['one character too long (64)', `${LONGEST}x`],
    ['upper case', 'Consumer-1'],
    ['a dot (a subdomain, not a label)', 'consumer.one'],
  ])('an ID the issuer refuses is refused by the plugin with the same code: %s', async (_what, clusterID) => {
    const refusedByIssuer = await trust(clusterID);
    const refusedByPlugin = await plugin(clusterID);
    // One rule, one code, one exit (2: a flag to fix) on both sides.
    expect(refusedByIssuer.code).toBe(2);
    expect(refusedByPlugin.code).toBe(2);
    expect(refusedByPlugin.stdout).toBe('');
    expect(codeOf(refusedByIssuer.stderr)).toBe('ERR_TENANT_CERT_FLAG');
    expect(codeOf(refusedByPlugin.stderr)).toBe(codeOf(refusedByIssuer.stderr));
    for (const stderr of [refusedByIssuer.stderr, refusedByPlugin.stderr]) {
      expect(stderr).toContain(`--cluster-id ${JSON.stringify(clusterID)} is not a cluster ID`);
      expect(stderr).toContain('(at --cluster-id)');
    }
  });
});
