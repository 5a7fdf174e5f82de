import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createKubeTransport } from '../../src/kube/transport.js';
import { buildTenant } from '../../src/wire/tenant-cert/documents.js';
import type { IdentityDocument } from '../../src/wire/tenant-cert/protocol.js';
import { kubernetesSigner } from '../../src/issuer/signer/kubernetes-signer.js';
import { issuerFixture, type IssuerFixture } from '../helpers/issuer-fixtures.js';
import {
  fakeKubeconfig,
  startFakeCsrApi,
  type FakeCsrApi,
  type FakeCsrApiOptions,
} from '../helpers/issuer-kube-csr-api.js';
import { cli, issuerClient, serveIssuer, nonceRequest } from '../helpers/issuer-process.js';
import { writeSplitKubeconfig } from '../helpers/kubeconfig-split.js';

const TOKEN = 'issuer-token';
let api: FakeCsrApi | undefined;
let fixture: IssuerFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  await api?.close();
  fixture = undefined;
  api = undefined;
});

async function setup(apiOptions: Partial<FakeCsrApiOptions> = {}, timeoutMs = 10_000) {
  api = await startFakeCsrApi({ token: TOKEN, ...apiOptions });
  const endpoint = { server: api.url, caPem: api.caPem };
  const signer = kubernetesSigner({
    connect: async () => createKubeTransport(endpoint, { kind: 'token', token: TOKEN }),
    now: () => new Date(),
    timeoutMs,
    pollIntervalMs: 50,
  });
  fixture = await issuerFixture({ signer, groups: ['tenants'], certLifetimeMs: 3_600_000 });
  // The fixture's clock is frozen in the past; the fake API server signs with real time.
  (fixture.issuer.options as { now: () => Date }).now = () => new Date();
  return { api, fixture };
}

async function tenantFor(f: IssuerFixture, exact = true) {
  const key = await f.consumer('c1');
  const nonce = await f.issuer.issueNonce(f.nonceRequest('c1'));
  return buildTenant({
    privateKey: key,
    consumerClusterID: 'c1',
    providerClusterID: 'p1',
    nonce: nonce.nonce,
    ...(exact ? { organizations: nonce.subject.organizations } : {}),
  });
}

describe('the Kubernetes CSR signer (certificates.k8s.io/v1 against a faithful local API server)', () => {
  it("creates, approves, awaits and deletes a CertificateSigningRequest; the certificate is the cluster CA's", async () => {
    const { api, fixture } = await setup();
    const accepted = await fixture.issuer.acceptTenant(await tenantFor(fixture));
    const certificate = new X509Certificate(
      Buffer.from((accepted.identity as IdentityDocument).spec.authParams.signedCRT, 'base64'),
    );
    expect(certificate.checkIssued(new X509Certificate(api.clusterCaPem))).toBe(true);
    expect(certificate.subject.split('\n').sort()).toEqual(['CN=c1', 'O=tenants']);
    const lifetime = new Date(certificate.validTo).getTime() - Date.now();
    expect(lifetime).toBeGreaterThan(3_500_000);
    expect(lifetime).toBeLessThanOrEqual(3_600_000);

    const methods = api.requests.map((r) => `${r.method} ${r.path.replace(/clusterprofile-c1-[0-9a-f]+/, 'NAME')}`);
    expect(methods[0]).toBe('POST /apis/certificates.k8s.io/v1/certificatesigningrequests');
    expect(methods[1]).toBe('PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/NAME/approval');
    expect(methods.at(-1)).toBe('DELETE /apis/certificates.k8s.io/v1/certificatesigningrequests/NAME');
    expect(api.deleted).toHaveLength(1);
    expect(api.objects.size).toBe(0);
  });

  it('sends signerName, expirationSeconds and client-auth usages, and approves with a reason', async () => {
    const { api, fixture } = await setup({ signDelayMs: 200 });
    const seen: Record<string, any>[] = [];
    const original = api.objects.set.bind(api.objects);
    api.objects.set = (name, object) => {
      seen.push(object);
      return original(name, object);
    };
    await fixture.issuer.acceptTenant(await tenantFor(fixture));
    expect(seen[0]!['spec']).toMatchObject({
      signerName: 'kubernetes.io/kube-apiserver-client',
      expirationSeconds: 3600,
      usages: ['digital signature', 'client auth'],
    });
    expect(seen[0]!['status'].conditions[0]).toMatchObject({
      type: 'Approved',
      status: 'True',
      reason: 'ClusterProfileIssuerApproved',
    });
  });

  it('an approval that conflicts (object updated meanwhile) is retried on the current version', async () => {
    const { api, fixture } = await setup({ touchAfterCreate: true });
    await expect(fixture.issuer.acceptTenant(await tenantFor(fixture))).resolves.toBeDefined();
    expect(api.requests.filter((r) => r.path.endsWith('/approval'))).toHaveLength(2);
  });

  it('refuses a CSR that does not ask for exactly the granted subject (the API server would copy it)', async () => {
    const { api, fixture } = await setup();
    await expect(fixture.issuer.acceptTenant(await tenantFor(fixture, false))).rejects.toMatchObject({
      code: 'ERR_TENANT_CSR_GROUPS',
    });
    expect(api.requests).toEqual([]);
  });

  it('missing RBAC to approve: ERR_ISSUER_SIGNER_DENIED, and the request is cleaned up', async () => {
    const { api, fixture } = await setup({ canApprove: false });
    await expect(fixture.issuer.acceptTenant(await tenantFor(fixture))).rejects.toMatchObject({
      code: 'ERR_ISSUER_SIGNER_DENIED',
      hint: expect.stringContaining('issuer-rbac.yaml'),
    });
    expect(api.objects.size).toBe(0);
  });

  it('missing RBAC to create: ERR_ISSUER_SIGNER_DENIED', async () => {
    const { fixture } = await setup({ canCreate: false });
    await expect(fixture.issuer.acceptTenant(await tenantFor(fixture))).rejects.toMatchObject({
      code: 'ERR_ISSUER_SIGNER_DENIED',
    });
  });

  it('no signer running: ERR_ISSUER_SIGNER_TIMEOUT after the deadline', async () => {
    const { fixture } = await setup({ signerRunning: false }, 1_000);
    const started = Date.now();
    await expect(fixture.issuer.acceptTenant(await tenantFor(fixture))).rejects.toMatchObject({
      code: 'ERR_ISSUER_SIGNER_TIMEOUT',
    });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('an API server that is down: ERR_ISSUER_SIGNER_FAILED', async () => {
    const { api, fixture } = await setup();
    await api.close();
    await expect(fixture.issuer.acceptTenant(await tenantFor(fixture))).rejects.toMatchObject({
      code: 'ERR_ISSUER_SIGNER_FAILED',
    });
  });

  it('`issuer serve --signer kubernetes --kubeconfig` end to end as a process', async () => {
    api = await startFakeCsrApi({ token: TOKEN });
    const work = mkdtempSync(join(tmpdir(), 'cpc-issuer-kube-'));
    try {
      const kubeconfig = join(work, 'kubeconfig');
      writeFileSync(kubeconfig, fakeKubeconfig(api, TOKEN));
      const keyFile = join(work, 'c1.key');
      const made = await cli(['keygen', '--out', keyFile, '--algorithm', 'ecdsa-p256']);
      writeFileSync(`${keyFile}.pub`, made.stdout);
      const dataDir = join(work, 'data');
      expect(
        (await cli(['issuer', 'trust', '--data-dir', dataDir, '--cluster-id', 'c1', '--public-key', `${keyFile}.pub`]))
          .code,
      ).toBe(0);
      const issuer = await serveIssuer(dataDir, 'p1', [
        '--signer',
        'kubernetes',
        '--kubeconfig',
        kubeconfig,
        '--cert-lifetime',
        '1h',
        '--group',
        'tenants',
      ]);
      const client = issuerClient(issuer);
      try {
        const nonce = await client.call('POST', '/v1/nonces', nonceRequest(keyFile, 'c1'));
        const tenant = await buildTenant({
          privateKey: createPrivateKey(readFileSync(keyFile, 'utf8')),
          consumerClusterID: 'c1',
          providerClusterID: 'p1',
          nonce: nonce.body.nonce,
          organizations: nonce.body.subject.organizations,
        });
        const identity = await client.call('POST', '/v1/tenants', tenant);
        expect(identity.status).toBe(201);
        const certificate = new X509Certificate(Buffer.from(identity.body.spec.authParams.signedCRT, 'base64'));
        expect(certificate.checkIssued(new X509Certificate(api.clusterCaPem))).toBe(true);
      } finally {
        await client.close();
        await issuer.stop();
      }
      // A kubeconfig that cannot be read fails at start, not at the first Tenant.
      const broken = await cli([
        'issuer',
        'serve',
        '--data-dir',
        dataDir,
        '--listen',
        '127.0.0.1:0',
        '--cluster-id',
        'p1',
        '--signer',
        'kubernetes',
        '--kubeconfig',
        join(work, 'missing'),
      ]);
      expect(broken.code).toBe(1);
      expect(broken.stderr).toMatch(/^ERR_KUBECONFIG_READ/);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
  it('`issuer serve --signer kubernetes` without --kubeconfig takes KUBECONFIG=a:b, merged as kubectl merges it', async () => {
    api = await startFakeCsrApi({ token: TOKEN });
    const work = mkdtempSync(join(tmpdir(), 'cpc-issuer-kube-split-'));
    try {
      const split = await writeSplitKubeconfig(join(work, 'split'), {
        server: api.url,
        caBase64: Buffer.from(api.caPem).toString('base64'),
        token: TOKEN,
      });
      const keyFile = join(work, 'c1.key');
      const made = await cli(['keygen', '--out', keyFile, '--algorithm', 'ecdsa-p256']);
      writeFileSync(`${keyFile}.pub`, made.stdout);
      const dataDir = join(work, 'data');
      expect(
        (await cli(['issuer', 'trust', '--data-dir', dataDir, '--cluster-id', 'c1', '--public-key', `${keyFile}.pub`]))
          .code,
      ).toBe(0);
      const issuer = await serveIssuer(
        dataDir,
        'p1',
        ['--signer', 'kubernetes', '--cert-lifetime', '1h', '--group', 'tenants'],
        { KUBECONFIG: split.KUBECONFIG },
      );
      const client = issuerClient(issuer);
      try {
        const nonce = await client.call('POST', '/v1/nonces', nonceRequest(keyFile, 'c1'));
        const tenant = await buildTenant({
          privateKey: createPrivateKey(readFileSync(keyFile, 'utf8')),
          consumerClusterID: 'c1',
          providerClusterID: 'p1',
          nonce: nonce.body.nonce,
          organizations: nonce.body.subject.organizations,
        });
        const identity = await client.call('POST', '/v1/tenants', tenant);
        expect(identity.status).toBe(201);
        const certificate = new X509Certificate(Buffer.from(identity.body.spec.authParams.signedCRT, 'base64'));
        expect(certificate.checkIssued(new X509Certificate(api.clusterCaPem))).toBe(true);
        expect(api.requests[0]).toMatchObject({
          method: 'POST',
          path: '/apis/certificates.k8s.io/v1/certificatesigningrequests',
        });
      } finally {
        await client.close();
        await issuer.stop();
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
