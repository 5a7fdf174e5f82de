/**
 * Liqo v1.2.0's own code (test/e2e/liqo, built from the Go module by test/e2e/controlplane/build.mjs) on either side of
 * our tenant-cert flow, for the three places where a Liqo cluster and ours disagreed:
 *  - a Tenant that Liqo forges with a proxyURL (forge.TenantForRemoteCluster) is answered by `clusterprofile tenant
 *    accept --liqo-compat`, and the kubeconfig Liqo forges from that Identity (forge.MutateKubeconfigSecret) dials
 *    through the same proxy;
 *  - `clusterprofile tenant generate --liqo --group G` asks for O=liqo.io first (Liqo's CheckCSRForControlPlane reads
 *    Organization[0]) and for G, and a certificate granted both is a control-plane user to Liqo's authorizer
 *    (IsControlPlaneUser);
 *  - a Liqo Identity without apiServer, from which Liqo forges a kubeconfig that names no server, is refused by
 *    `clusterprofile identity import` with ERR_TENANT_CERT_IDENTITY_INVALID at $.spec.authParams.apiServer.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { e2eContext } from '../helpers/controlplane-e2e.js';
import { CLI, runNode, startIssuer } from '../helpers/tenant-cert-plugin-run.js';

const PROVIDER = 'liqo-provider';
const CONSUMER = 'liqo-consumer';
const PROXY = 'http://proxy.liqo-consumer.test:3128';
const API_SERVER = 'https://provider.example:6443';

interface LiqoAnswer {
  error?: string;
  tenant?: { apiVersion: string; spec: Record<string, unknown> };
  organizations?: string[];
  controlPlane?: boolean;
  kubeconfig?: string;
}

/** One request to the Liqo driver. */
function liqo(request: Record<string, unknown>): Promise<LiqoAnswer> {
  return new Promise((resolve, reject) => {
    const child = execFile(e2eContext().binaries.liqo, [], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`liqo driver: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as LiqoAnswer);
    });
    child.stdin?.end(JSON.stringify(request));
  });
}

let root: string;
let dataDir: string;
let keyFile: string;
let keyPem: string;

async function cli(...args: string[]): Promise<string> {
  const result = await runNode(CLI, args);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

const nonce = async (): Promise<string> =>
  (await cli('tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', CONSUMER)).trim();

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'cpc-liqo-'));
  dataDir = join(root, 'provider');
  keyFile = join(root, 'consumer.key');
  writeFileSync(join(root, 'consumer.pub'), await cli('keygen', '--out', keyFile));
  keyPem = readFileSync(keyFile, 'utf8');
  await (await startIssuer(dataDir, PROVIDER)).stop();
  await cli(
    'issuer',
    'trust',
    '--data-dir',
    dataDir,
    '--cluster-id',
    CONSUMER,
    '--public-key',
    join(root, 'consumer.pub'),
  );
});

describe("Liqo v1.2.0's consumer code against our issuer", () => {
  it("a Liqo Tenant's proxyURL comes back in the Identity, and the kubeconfig Liqo forges from it dials through that proxy", async () => {
    const forged = await liqo({
      kind: 'tenant',
      key: keyPem,
      clusterID: CONSUMER,
      nonce: await nonce(),
      proxyURL: PROXY,
    });
    expect(forged.error).toBeUndefined();
    expect(forged.tenant).toMatchObject({ apiVersion: 'authentication.liqo.io/v1beta1', spec: { proxyURL: PROXY } });
    const tenantFile = join(root, 'liqo-tenant.yaml');
    writeFileSync(tenantFile, stringify(forged.tenant));

    const identity = parse(
      await cli('tenant', 'accept', '--data-dir', dataDir, '--liqo-compat', '--api-server-url', API_SERVER, tenantFile),
    ) as { spec: { authParams: Record<string, string> } };
    expect(identity.spec.authParams).toMatchObject({ apiServer: API_SERVER, proxyURL: PROXY });

    const secret = await liqo({ kind: 'kubeconfig', identity, key: keyPem });
    expect(secret.error).toBeUndefined();
    const kubeconfig = parse(secret.kubeconfig ?? '') as { clusters: Array<{ cluster: Record<string, string> }> };
    expect(kubeconfig.clusters).toEqual([
      { name: PROVIDER, cluster: expect.objectContaining({ server: API_SERVER, 'proxy-url': PROXY }) },
    ]);
  });

  it('a Liqo Tenant whose proxyURL is not a URL is refused, coded, naming the field', async () => {
    const forged = await liqo({
      kind: 'tenant',
      key: keyPem,
      clusterID: CONSUMER,
      nonce: await nonce(),
      proxyURL: 'proxy.example:3128',
    });
    const tenantFile = join(root, 'liqo-tenant-bad-proxy.yaml');
    writeFileSync(tenantFile, stringify(forged.tenant));
    const result = await runNode(CLI, ['tenant', 'accept', '--data-dir', dataDir, '--liqo-compat', tenantFile]);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_INVALID_DOCUMENT');
    expect(result.stderr).toContain('$.spec.proxyURL');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('tenant generate --liqo --group keeps O=liqo.io first: Liqo accepts the CSR, and the granted certificate is a control-plane user', async () => {
    const tenant = parse(
      await cli(
        'tenant',
        'generate',
        '--liqo',
        '--group',
        'team-a',
        '--key-file',
        keyFile,
        '--cluster-id',
        CONSUMER,
        '--provider-cluster-id',
        PROVIDER,
        '--nonce',
        await nonce(),
        '--proxy-url',
        PROXY,
      ),
    ) as { spec: { csr: string; publicKey: string; proxyURL?: string } };
    expect(tenant.spec.proxyURL).toBe(PROXY);
    const csr = Buffer.from(tenant.spec.csr, 'base64').toString('utf8');
    const publicKey = Buffer.from(tenant.spec.publicKey, 'base64').toString('utf8');
    expect(await liqo({ kind: 'check-csr', csr, publicKey, clusterID: CONSUMER })).toEqual({
      organizations: ['liqo.io', 'team-a'],
    });
    // What Liqo's own consumer asks for, for comparison: O=liqo.io alone.
    const own = await liqo({ kind: 'tenant', key: keyPem, clusterID: CONSUMER, nonce: 'n' });
    const ownCsr = Buffer.from(String(own.tenant?.spec['csr']), 'base64').toString('utf8');
    expect(await liqo({ kind: 'check-csr', csr: ownCsr, publicKey, clusterID: CONSUMER })).toEqual({
      organizations: ['liqo.io'],
    });

    // Our issuer granting both groups: the certificate passes Liqo's authorizer test.
    const tenantFile = join(root, 'tenant-groups.yaml');
    writeFileSync(tenantFile, stringify(tenant));
    const identity = parse(
      await cli(
        'tenant',
        'accept',
        '--data-dir',
        dataDir,
        '--liqo-compat',
        '--group',
        'liqo.io',
        '--group',
        'team-a',
        '--api-server-url',
        API_SERVER,
        tenantFile,
      ),
    ) as { spec: { authParams: { signedCRT: string; proxyURL?: string } } };
    expect(identity.spec.authParams.proxyURL).toBe(PROXY);
    const certificate = Buffer.from(identity.spec.authParams.signedCRT, 'base64').toString('utf8');
    expect(new X509Certificate(certificate).subject).toContain('O=liqo.io');
    expect(await liqo({ kind: 'authorize', certificate })).toMatchObject({ controlPlane: true });
  });

  it('a Liqo Identity without apiServer: Liqo forges a kubeconfig naming no server; identity import refuses it, coded', async () => {
    const forged = await liqo({ kind: 'tenant', key: keyPem, clusterID: CONSUMER, nonce: await nonce() });
    const tenantFile = join(root, 'liqo-tenant-no-api.yaml');
    writeFileSync(tenantFile, stringify(forged.tenant));
    // An issuer that was not told its API server answers without one.
    const text = await cli('tenant', 'accept', '--data-dir', dataDir, '--liqo-compat', tenantFile);
    const identity = parse(text) as { spec: { authParams: Record<string, string> } };
    expect(identity.spec.authParams['apiServer']).toBeUndefined();

    const secret = await liqo({ kind: 'kubeconfig', identity, key: keyPem });
    const kubeconfig = parse(secret.kubeconfig ?? '') as { clusters: Array<{ cluster: Record<string, string> }> };
    expect(kubeconfig.clusters[0]?.cluster['server'] ?? '').toBe('');

    const identityFile = join(root, 'identity-no-api.yaml');
    writeFileSync(identityFile, text);
    const result = await runNode(CLI, [
      'identity',
      'import',
      identityFile,
      '--key-file',
      keyFile,
      '--identity-dir',
      join(root, 'ids'),
      '--server',
      API_SERVER,
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_CERT_IDENTITY_INVALID');
    expect(result.stderr).toContain('$.spec.authParams.apiServer');
    expect(result.stderr.length).toBeLessThan(2000);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
