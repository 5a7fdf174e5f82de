/**
 * The declarative tenant-cert flow on the real control plane: the Tenant and Identity CRDs of deploy/crds/ installed
 * with server-side apply; `clusterprofile issuer serve --reconcile-tenants` (our bin, a child process) running as a
 * ServiceAccount that holds only deploy/base/tenant-flow-rbac.yaml's Role; its embedded client CA is the control
 * plane's client CA (--client-ca-file), so what it issues authenticates. A Tenant applied with `kubectl apply` is
 * answered with a nonce, then with an Identity and a kubeconfig Secret whose certificate passes a SelfSubjectReview;
 * every bad input ends in a coded Ready condition and no Identity; `tenant apply --to-cluster` renews into the same
 * Identity and Secret; `identity import --from-cluster` then the tenant-cert plugin give kubectl a credential.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyAsAdmin,
  clientCertKubeconfig,
  e2eContext,
  kubectl,
  tempFile,
  tokenKubeconfig,
  whoami,
} from '../helpers/controlplane-e2e.js';
import { customCsrPem, tenantWithCsr } from '../helpers/issuer-fixtures.js';
import { CLI, runNode, startIssuer, type RunningIssuer } from '../helpers/tenant-cert-plugin-run.js';
import { buildTenant } from '../../src/wire/tenant-cert/documents.js';
import { generateClusterKeyPair, signBytes } from '../../src/wire/tenant-cert/keys.js';
import { signNonceRequest } from '../../src/wire/tenant-cert/message.js';
import { x509 } from '../../src/wire/tenant-cert/x509.js';
import { REPO, TENANT_CERT_BIN, adminKubectl, tempDir, templatedManifest } from './fixtures/tenant-cert-issuer.js';

const PROVIDER = 'member-tf';
const CONSUMER = 'hub-tf';
const GROUP = 'fleet-tenants';
const NS = 'clusterprofile-system-tf';
const SERVICE_ACCOUNT = 'clusterprofile-issuer-tf';
const API = 'credentials.clusterprofile.io/v1alpha1';
const BOOTSTRAP_USER = 'hub-tf-bootstrap';

type Json = Record<string, any>;

let issuer: RunningIssuer;
let keyFile: string;
let privateKey: KeyObject;
let consumerKubeconfig: string;
let clock = Date.now();

/** A fresh timestamp per nonce request (the issuer remembers each (consumer, timestamp) it answered). */
const stamp = (): Date => new Date((clock = Math.max(clock + 1, Date.now())));

async function getJson(kind: string, name: string): Promise<Json | undefined> {
  const { controlPlane } = e2eContext();
  const result = await kubectl(controlPlane.adminKubeconfig, ['get', kind, name, '-n', NS, '-o', 'json']);
  if (result.code !== 0) {
    if (result.stderr.includes('NotFound')) return undefined;
    throw new Error(`kubectl get ${kind} ${name}: ${result.stderr}`);
  }
  return JSON.parse(result.stdout) as Json;
}

/** `kubectl apply` of a Tenant, as the provider's admin would apply a Tenant YAML handed over by the consumer. */
async function applyTenant(name: string, spec: Json): Promise<void> {
  await adminKubectl(
    ['apply', '-n', NS, '-f', '-'],
    JSON.stringify({ apiVersion: API, kind: 'Tenant', metadata: { name }, spec }),
  );
}

/** The Tenant once the issuer answered its current generation. */
async function answered(name: string, timeoutMs = 30_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const tenant = await getJson('tenants.credentials.clusterprofile.io', name);
    if (tenant !== undefined && tenant.status?.observedGeneration === tenant.metadata.generation) return tenant;
    if (Date.now() > deadline)
      throw new Error(
        `Tenant ${name} not answered in ${timeoutMs} ms: ${JSON.stringify(tenant?.status)}\n${issuer.output()}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const ready = (tenant: Json): Json =>
  (tenant.status?.conditions as Json[] | undefined)?.find((item) => item.type === 'Ready') ?? {};

/** Step 1 by hand: a signed nonce request in the Tenant; returns the nonce the issuer wrote into status. */
async function nonceFor(
  name: string,
  key: KeyObject = privateKey,
): Promise<{ value: string; subject: { commonName: string; organizations: string[] } }> {
  const request = signNonceRequest(key, { providerClusterID: PROVIDER, consumerClusterID: CONSUMER }, stamp());
  await applyTenant(name, {
    clusterID: CONSUMER,
    providerClusterID: PROVIDER,
    nonceRequest: { timestamp: request.timestamp, signature: request.signature },
  });
  const tenant = await answered(name);
  expect(ready(tenant).reason, JSON.stringify(tenant.status)).toBe('NonceIssued');
  return tenant.status.nonce as { value: string; subject: { commonName: string; organizations: string[] } };
}

/** The kubeconfig of an Identity's Secret with the consumer's key added (the Secret never holds it). */
async function secretKubeconfig(
  secretName: string,
): Promise<{ file: string; certificate: X509Certificate; secret: Json }> {
  const secret = (await getJson('secret', secretName))!;
  const config = parse(Buffer.from(secret.data.kubeconfig, 'base64').toString('utf8')) as Json;
  expect(config.users[0].user['client-key-data']).toBeUndefined();
  config.users[0].user['client-key-data'] = Buffer.from(await readFile(keyFile, 'utf8')).toString('base64');
  const file = await tempFile(`${secretName}.kubeconfig`, stringify(config));
  return {
    file,
    certificate: new X509Certificate(Buffer.from(secret.data['tls.crt'], 'base64').toString('utf8')),
    secret,
  };
}

beforeAll(async () => {
  const { controlPlane } = e2eContext();
  // The CRDs, installed with server-side apply.
  await adminKubectl([
    'apply',
    '--server-side',
    '--field-manager=e2e-crd-installer',
    '-k',
    path.join(REPO, 'deploy/crds/'),
  ]);
  await adminKubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/tenants.credentials.clusterprofile.io',
    'crd/identities.credentials.clusterprofile.io',
  ]);

  // The issuer's identity: a ServiceAccount bound by the shipped Role only.
  await adminKubectl(['create', 'namespace', NS]);
  await adminKubectl(['create', 'serviceaccount', SERVICE_ACCOUNT, '-n', NS]);
  await applyAsAdmin(
    await templatedManifest('deploy/base/tenant-flow-rbac.yaml', [
      ['clusterprofile-system', NS],
      ['clusterprofile-issuer', SERVICE_ACCOUNT],
    ]),
  );
  const token = (await adminKubectl(['create', 'token', SERVICE_ACCOUNT, '-n', NS, '--duration', '1h'])).trim();
  const issuerKubeconfig = await tokenKubeconfig('issuer-tf', token);

  // The consumer: its key, trusted by the issuer; a bootstrap identity on the provider bound to the consumer Role;
  // once it has its certificate it may read configmaps in the Tenants' namespace.
  const dataDir = await tempDir('issuer-tf');
  await copyFile(controlPlane.clientCaCertFile, path.join(dataDir, 'client-ca.crt'));
  await copyFile(controlPlane.clientCaKeyFile, path.join(dataDir, 'client-ca.key'));
  keyFile = path.join(await tempDir('consumer-tf'), 'consumer.key');
  const keygen = await runNode(CLI, ['keygen', '--out', keyFile, '--algorithm', 'ecdsa-p256']);
  expect(keygen.code, keygen.stderr).toBe(0);
  await writeFile(`${keyFile}.pub`, keygen.stdout);
  privateKey = createPrivateKey(await readFile(keyFile, 'utf8'));
  const trust = await runNode(CLI, [
    'issuer',
    'trust',
    '--data-dir',
    dataDir,
    '--cluster-id',
    CONSUMER,
    '--public-key',
    `${keyFile}.pub`,
  ]);
  expect(trust.code, trust.stderr).toBe(0);
  consumerKubeconfig = await clientCertKubeconfig(BOOTSTRAP_USER);
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'tenant-consumer-hub-tf', namespace: NS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'clusterprofile-tenant-consumer' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: BOOTSTRAP_USER }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'consumer-configmaps', namespace: NS },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'consumer-configmaps', namespace: NS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'consumer-configmaps' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: CONSUMER }],
      },
    ],
  });
  await adminKubectl(['create', 'configmap', 'hello', '-n', NS, '--from-literal=greeting=declared']);

  issuer = await startIssuer(dataDir, PROVIDER, [
    '--reconcile-tenants',
    '--namespace',
    NS,
    '--kubeconfig',
    issuerKubeconfig,
    '--cert-lifetime',
    '10m',
    '--nonce-ttl',
    '10m',
    '--api-server-url',
    controlPlane.server,
    '--api-server-ca',
    controlPlane.caFile,
    '--group',
    GROUP,
  ]);
}, 120_000);

afterAll(async () => {
  await issuer?.stop();
});

describe('the declarative Tenant/Identity flow (issuer serve --reconcile-tenants)', () => {
  let identityUid: string;
  let firstSerial: string;
  let step2Spec: Json;

  it('kubectl apply of a Tenant: a nonce, then an Identity owning a kubeconfig Secret whose certificate passes SelfSubjectReview', async () => {
    const nonce = await nonceFor(CONSUMER);
    expect(nonce.value).toHaveLength(88);
    expect(nonce.subject).toEqual({ commonName: CONSUMER, organizations: [GROUP] });

    const tenant = await buildTenant({
      privateKey,
      consumerClusterID: CONSUMER,
      providerClusterID: PROVIDER,
      nonce: nonce.value,
    });
    step2Spec = tenant.spec;
    await applyTenant(CONSUMER, tenant.spec);
    const done = await answered(CONSUMER);
    expect(ready(done)).toMatchObject({ status: 'True', reason: 'Issued' });
    expect(done.status.nonce).toBeUndefined();
    expect(done.status.identityRef).toEqual({ name: CONSUMER });
    const lifetime = Date.parse(done.status.notAfter) - Date.parse(done.status.notBefore);
    expect(Date.parse(done.status.renewAfter) - Date.parse(done.status.notBefore)).toBeCloseTo((lifetime * 2) / 3, -3);

    const identity = (await getJson('identities.credentials.clusterprofile.io', CONSUMER))!;
    identityUid = identity.metadata.uid as string;
    expect(identity.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Tenant', name: CONSUMER, uid: done.metadata.uid, controller: true }),
    ]);
    expect(identity.spec).toMatchObject({
      clusterID: PROVIDER,
      consumerClusterID: CONSUMER,
      authParams: { apiServer: e2eContext().controlPlane.server },
    });
    expect(identity.status.kubeconfigSecretRef).toEqual({ name: `kubeconfig-${CONSUMER}` });

    const { file, certificate, secret } = await secretKubeconfig(`kubeconfig-${CONSUMER}`);
    expect(secret.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Identity', name: CONSUMER, uid: identityUid, controller: true }),
    ]);
    expect(certificate.subject.split('\n').sort()).toEqual([`CN=${CONSUMER}`, `O=${GROUP}`]);
    firstSerial = certificate.serialNumber;
    const who = await whoami(file);
    expect(who.username).toBe(CONSUMER);
    expect(who.groups.sort()).toEqual([GROUP, 'system:authenticated'].sort());
    const allowed = await kubectl(file, ['get', 'configmap', 'hello', '-n', NS, '-o', 'jsonpath={.data.greeting}']);
    expect(allowed.stdout).toBe('declared');
  });

  it('re-reconciling an answered Tenant issues nothing new (a change that is not a new generation)', async () => {
    const before = (await getJson('identities.credentials.clusterprofile.io', CONSUMER))!;
    const secretBefore = (await getJson('secret', `kubeconfig-${CONSUMER}`))!;
    await adminKubectl(['annotate', 'tenants.credentials.clusterprofile.io', CONSUMER, '-n', NS, 'touched=yes']);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const after = (await getJson('identities.credentials.clusterprofile.io', CONSUMER))!;
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect((await getJson('secret', `kubeconfig-${CONSUMER}`))!.metadata.resourceVersion).toBe(
      secretBefore.metadata.resourceVersion,
    );
    expect(issuer.output().match(/certificate issued/g)).toHaveLength(1);
  });

  describe('bad input: a coded Ready condition, no Identity', () => {
    async function refused(name: string, spec: Json | (() => Promise<Json>)): Promise<Json> {
      await applyTenant(name, typeof spec === 'function' ? await spec() : spec);
      const tenant = await answered(name);
      expect(ready(tenant).status).toBe('False');
      expect(await getJson('identities.credentials.clusterprofile.io', name)).toBeUndefined();
      expect(await getJson('secret', `kubeconfig-${name}`)).toBeUndefined();
      return ready(tenant);
    }

    it('a forged signature', async () => {
      const nonce = await nonceFor('forged');
      const tenant = await buildTenant({
        privateKey,
        consumerClusterID: CONSUMER,
        providerClusterID: PROVIDER,
        nonce: nonce.value,
      });
      const forger = generateClusterKeyPair('ecdsa-p256');
      const forged = {
        ...tenant.spec,
        signature: signBytes(createPrivateKey(forger.privateKeyPem), Buffer.from(nonce.value)).toString('base64'),
      };
      await applyTenant('forged', forged);
      const condition = ready(await answered('forged'));
      expect(condition).toMatchObject({ reason: 'ERR_TENANT_SIGNATURE_INVALID' });
      expect(condition.message).toContain('$.spec.signature');
      expect(await getJson('identities.credentials.clusterprofile.io', 'forged')).toBeUndefined();
    });

    it('an unregistered key (the nonce request, and the Tenant)', async () => {
      const stranger = createPrivateKey(generateClusterKeyPair('ecdsa-p256').privateKeyPem);
      const request = signNonceRequest(stranger, { providerClusterID: PROVIDER, consumerClusterID: CONSUMER }, stamp());
      expect(
        await refused('stranger-nonce', {
          clusterID: CONSUMER,
          providerClusterID: PROVIDER,
          nonceRequest: { timestamp: request.timestamp, signature: request.signature },
        }),
      ).toMatchObject({
        reason: 'ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID',
      });
      const nonce = await nonceFor('stranger');
      const tenant = await buildTenant({
        privateKey: stranger,
        consumerClusterID: CONSUMER,
        providerClusterID: PROVIDER,
        nonce: nonce.value,
      });
      expect(await refused('stranger', tenant.spec)).toMatchObject({ reason: 'ERR_TENANT_KEY_NOT_TRUSTED' });
    });

    it('a CSR asking for other groups, or for SANs', async () => {
      const groups = await nonceFor('groups');
      const masters = await customCsrPem(privateKey, { name: `O=system:masters, CN=${CONSUMER}` });
      expect(
        await refused('groups', tenantWithCsr(privateKey, CONSUMER, groups.value, masters, PROVIDER).spec),
      ).toMatchObject({ reason: 'ERR_TENANT_CSR_GROUPS' });
      const sans = await nonceFor('sans');
      const withSans = await customCsrPem(privateKey, {
        name: `CN=${CONSUMER}`,
        extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: 'kubernetes.default' }])],
      });
      expect(
        await refused('sans', tenantWithCsr(privateKey, CONSUMER, sans.value, withSans, PROVIDER).spec),
      ).toMatchObject({ reason: 'ERR_TENANT_CSR_SANS' });
    });

    it("a replayed nonce (the answered Tenant's spec applied again under another name)", async () => {
      expect(await refused('replayed', step2Spec)).toMatchObject({ reason: 'ERR_TENANT_NONCE_REUSED' });
    });

    it('a malformed document', async () => {
      const condition = await refused('malformed', {
        clusterID: CONSUMER,
        providerClusterID: PROVIDER,
        nonce: 'abc',
        publicKey: 'not base64!',
      });
      expect(condition.reason).toBe('ERR_TENANT_INVALID_DOCUMENT');
      expect(condition.message).toContain('$.spec.csr');
      expect(await refused('empty', { clusterID: CONSUMER })).toMatchObject({ reason: 'ERR_TENANT_INVALID_DOCUMENT' });
    });
  });

  it('tenant apply --to-cluster: nothing before the renewal point; --force renews into the same Identity and Secret', async () => {
    const flags = [
      '--to-cluster',
      '--key-file',
      keyFile,
      '--cluster-id',
      CONSUMER,
      '--provider-cluster-id',
      PROVIDER,
      '--namespace',
      NS,
      '--provider-kubeconfig',
      consumerKubeconfig,
    ];
    const early = await runNode(CLI, ['tenant', 'apply', ...flags]);
    expect(early.stderr).toContain('before its renewal point');
    expect(early.code).toBe(0);
    expect(early.stdout).toBe(`${CONSUMER}\n`);

    const renewed = await runNode(CLI, ['tenant', 'apply', ...flags, '--force']);
    expect(renewed.stderr).toContain(`Identity ${CONSUMER}, Secret kubeconfig-${CONSUMER}`);
    expect(renewed.code).toBe(0);
    const identity = (await getJson('identities.credentials.clusterprofile.io', CONSUMER))!;
    expect(identity.metadata.uid).toBe(identityUid);
    const { file, certificate } = await secretKubeconfig(`kubeconfig-${CONSUMER}`);
    expect(certificate.serialNumber).not.toBe(firstSerial);
    expect(Buffer.from(identity.spec.authParams.signedCRT, 'base64').toString('utf8')).toBe(certificate.toString());
    expect((await whoami(file)).username).toBe(CONSUMER);
  });

  it("tenant apply --to-cluster with the issuer's refusal: the coded error, exit 1, nothing on stdout", async () => {
    const other = path.join(await tempDir('other-key'), 'other.key');
    expect((await runNode(CLI, ['keygen', '--out', other])).code).toBe(0);
    const result = await runNode(CLI, [
      'tenant',
      'apply',
      '--to-cluster',
      '--key-file',
      other,
      '--cluster-id',
      CONSUMER,
      '--provider-cluster-id',
      PROVIDER,
      '--namespace',
      NS,
      '--provider-kubeconfig',
      consumerKubeconfig,
      '--force',
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID');
    // The Identity issued before is untouched.
    expect((await getJson('identities.credentials.clusterprofile.io', CONSUMER))!.metadata.uid).toBe(identityUid);
  });

  it('identity import --from-cluster, then the tenant-cert plugin: a credential kubectl uses', async () => {
    // The refused apply above left the Tenant refused: renew it first (the Identity is kept either way).
    const renew = await runNode(CLI, [
      'tenant',
      'apply',
      '--to-cluster',
      '--key-file',
      keyFile,
      '--cluster-id',
      CONSUMER,
      '--provider-cluster-id',
      PROVIDER,
      '--namespace',
      NS,
      '--provider-kubeconfig',
      consumerKubeconfig,
      '--force',
    ]);
    expect(renew.code, renew.stderr).toBe(0);
    const identityDir = await tempDir('identities-tf');
    const cacheDir = await tempDir('cache-tf');
    const out = path.join(identityDir, '..', 'member-tf.kubeconfig');
    const imported = await runNode(CLI, [
      'identity',
      'import',
      '--from-cluster',
      '--cluster-id',
      CONSUMER,
      '--key-file',
      keyFile,
      '--identity-dir',
      identityDir,
      '--namespace',
      NS,
      '--provider-kubeconfig',
      consumerKubeconfig,
      '--kubeconfig',
      out,
    ]);
    expect(imported.stderr).toContain(`imported the Identity of ${PROVIDER} for ${CONSUMER}`);
    expect(imported.code).toBe(0);
    expect(imported.stdout.trim()).toBe(path.join(identityDir, CONSUMER, `${PROVIDER}.yaml`));

    // The kubeconfig runs the plugin; here through this Node (the one on PATH may be older than the package needs).
    const config = parse(await readFile(out, 'utf8')) as Json;
    const exec = config.users[0].user.exec as Json;
    exec.args = [TENANT_CERT_BIN, ...(exec.args as string[]), '--cache-dir', cacheDir];
    exec.command = process.execPath;
    const kubeconfig = await tempFile('member-tf-plugin.kubeconfig', stringify(config));
    const who = await whoami(kubeconfig);
    expect(who.username).toBe(CONSUMER);
    expect(who.groups).toContain(GROUP);
  });

  it('identity import --from-cluster of a Tenant without an Identity: ERR_TENANT_FLOW_NO_IDENTITY', async () => {
    const result = await runNode(CLI, [
      'identity',
      'import',
      '--from-cluster',
      '--cluster-id',
      'nobody',
      '--key-file',
      keyFile,
      '--identity-dir',
      await tempDir('identities-none'),
      '--namespace',
      NS,
      '--provider-kubeconfig',
      consumerKubeconfig,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ERR_TENANT_FLOW_NO_IDENTITY');
  });

  it('deleting the Identity collects its Secret (owner references)', async () => {
    await adminKubectl(['delete', 'identities.credentials.clusterprofile.io', CONSUMER, '-n', NS, '--wait=true']);
    const deadline = Date.now() + 30_000;
    while ((await getJson('secret', `kubeconfig-${CONSUMER}`)) !== undefined) {
      if (Date.now() > deadline) throw new Error('the Secret was not collected');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  });
});
