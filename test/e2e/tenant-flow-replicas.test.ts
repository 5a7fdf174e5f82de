/**
 * The declarative flow as deploy/base runs it: two `clusterprofile issuer serve --state kubernetes --reconcile-tenants`
 * replicas (our bin, child processes) sharing one namespace, both reconciling the same Tenants, as the ServiceAccount
 * of the shipped Roles (issuer-state-rbac.yaml and tenant-flow-rbac.yaml) and nothing else. The client CA Secret is
 * put in place by the admin (the control plane's client CA, so what the replicas issue authenticates). A Tenant
 * applied with kubectl is answered once — one nonce in its status, one certificate, whichever replica wins — and the
 * Identity's kubeconfig passes a SelfSubjectReview.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../src/wire/tenant-cert/documents.js';
import { generateClusterKeyPair } from '../../src/wire/tenant-cert/keys.js';
import { signNonceRequest } from '../../src/wire/tenant-cert/message.js';
import { ANNOTATION_PROVIDER, CLIENT_CA_SECRET } from '../../src/issuer/state/kubernetes/secrets.js';
import { applyAsAdmin, e2eContext, kubectl, tempFile, tokenKubeconfig, whoami } from '../helpers/controlplane-e2e.js';
import { cli, startIssuerProcess, type IssuerProcess } from '../helpers/issuer-process.js';
import { REPO, adminKubectl, templatedManifest } from './fixtures/tenant-cert-issuer.js';

const NS = 'issuer-tf-replicas';
const PROVIDER = 'member-tfr';
const CONSUMER = 'hub-tfr';
const GROUP = 'fleet-tenants';
const API = 'credentials.clusterprofile.io/v1alpha1';
const replicas: IssuerProcess[] = [];
/** Every Ready reason a poll saw for the Tenant's current generation. */
const seen: string[] = [];

type Json = Record<string, any>;

async function tenant(name: string): Promise<Json> {
  return JSON.parse(
    await adminKubectl(['get', 'tenants.credentials.clusterprofile.io', name, '-n', NS, '-o', 'json']),
  ) as Json;
}

/** Polls until the Tenant's Ready condition has `reason` for its current generation. */
async function until(reason: string, timeoutMs = 30_000, name = CONSUMER): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const current = await tenant(name);
    const ready = (current.status?.conditions as Json[] | undefined)?.find((item) => item.type === 'Ready');
    if (current.status?.observedGeneration === current.metadata.generation && ready !== undefined)
      seen.push(ready.reason as string);
    if (current.status?.observedGeneration === current.metadata.generation && ready?.reason === reason) return current;
    if (Date.now() > deadline)
      throw new Error(
        `Tenant not ${reason} in ${timeoutMs} ms: ${JSON.stringify(current.status)}\n${replicas.map((r) => r.log()).join('\n---\n')}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const applyTenant = (spec: Json, name = CONSUMER): Promise<string> =>
  adminKubectl(
    ['apply', '-n', NS, '-f', '-'],
    JSON.stringify({ apiVersion: API, kind: 'Tenant', metadata: { name }, spec }),
  );
let step2Spec: Json;

let privateKeyPem: string;

beforeAll(async () => {
  const { controlPlane } = e2eContext();
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
  await adminKubectl(['create', 'namespace', NS]);
  await adminKubectl(
    ['apply', '-f', '-'],
    await templatedManifest('deploy/base/issuer-state-rbac.yaml', [['clusterprofile-system', NS]]),
  );
  await adminKubectl(
    ['apply', '-f', '-'],
    await templatedManifest('deploy/base/tenant-flow-rbac.yaml', [['clusterprofile-system', NS]]),
  );
  // The admin's client CA for the state (docs/guides/issuer-kubernetes.md: a CA the API server already trusts, in the Secret's shape).
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name: CLIENT_CA_SECRET, namespace: NS, annotations: { [ANNOTATION_PROVIDER]: PROVIDER } },
    data: {
      'tls.crt': (await readFile(controlPlane.clientCaCertFile)).toString('base64'),
      'tls.key': (await readFile(controlPlane.clientCaKeyFile)).toString('base64'),
    },
  });
  const token = (await adminKubectl(['-n', NS, 'create', 'token', 'clusterprofile-issuer', '--duration', '1h'])).trim();
  const saKubeconfig = await tokenKubeconfig('issuer-tfr', token);
  const pair = generateClusterKeyPair('ecdsa-p256');
  privateKeyPem = pair.privateKeyPem;
  const publicKeyFile = await tempFile('hub-tfr.pub', pair.publicKeyPem);
  const trusted = await cli([
    'issuer',
    'trust',
    '--state',
    'kubernetes',
    '--namespace',
    NS,
    '--kubeconfig',
    controlPlane.adminKubeconfig,
    '--cluster-id',
    CONSUMER,
    '--public-key',
    publicKeyFile,
  ]);
  expect(trusted.code, trusted.stderr).toBe(0);
  const args = [
    '--state',
    'kubernetes',
    '--namespace',
    NS,
    '--kubeconfig',
    saKubeconfig,
    '--listen',
    '127.0.0.1:0',
    '--cluster-id',
    PROVIDER,
    '--reconcile-tenants',
  ];
  const more = [
    '--api-server-url',
    controlPlane.server,
    '--api-server-ca',
    controlPlane.caFile,
    '--group',
    GROUP,
    '--cert-lifetime',
    '10m',
  ];
  replicas.push(
    ...(await Promise.all([startIssuerProcess([...args, ...more]), startIssuerProcess([...args, ...more])])),
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await adminKubectl(['delete', 'namespace', NS, '--wait=false']).catch(() => undefined);
});

describe('the declarative flow on --state kubernetes, two replicas reconciling the same Tenants', () => {
  it('kubectl apply of a Tenant: a nonce, then one certificate, an Identity and a kubeconfig Secret that passes SelfSubjectReview', async () => {
    const key = createPrivateKey(privateKeyPem);
    const request = signNonceRequest(key, { providerClusterID: PROVIDER, consumerClusterID: CONSUMER }, new Date());
    await applyTenant({
      clusterID: CONSUMER,
      providerClusterID: PROVIDER,
      nonceRequest: { timestamp: request.timestamp, signature: request.signature },
    });
    const step1 = await until('NonceIssued');
    const nonce = step1.status.nonce.value as string;
    expect(nonce).toHaveLength(88);

    const document = await buildTenant({
      privateKey: key,
      consumerClusterID: CONSUMER,
      providerClusterID: PROVIDER,
      nonce,
    });
    step2Spec = document.spec;
    await applyTenant(document.spec);
    const done = await until('Issued');
    expect(done.status.identityRef).toEqual({ name: CONSUMER });
    // Both replicas judged the generation; the nonce was spent once, so one certificate was issued in all.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const issued = replicas.map((replica) => (replica.log().match(/certificate issued/g) ?? []).length);
    expect(
      issued.reduce((a, b) => a + b, 0),
      replicas.map((r) => r.log()).join('\n---\n'),
    ).toBe(1);
    // The replica that lost the race learnt at once that the nonce was spent; its refusal is never shown (it waits
    // out a grace period, then finds the generation answered), not even for a moment.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    expect((await until('Issued')).status.identityRef).toEqual({ name: CONSUMER });
    expect(seen.filter((reason) => reason !== 'NonceIssued' && reason !== 'Issued')).toEqual([]);
    // Whether the other replica judged generation 2 at all depends on when its first list came (1 run in 5: after the
    // answer, so it had nothing to judge); when it did, it found the nonce spent and dropped its refusal.
    const logs = replicas.map((r) => r.log()).join('\n');
    if (/\(generation 2\): refused ERR_TENANT_NONCE_REUSED/.test(logs)) {
      expect(logs).toMatch(/\(generation 2\): answered by another replica; its nonce-reused refusal is dropped/);
    }

    const secret = JSON.parse(
      await adminKubectl(['get', 'secret', `kubeconfig-${CONSUMER}`, '-n', NS, '-o', 'json']),
    ) as Json;
    const config = parse(Buffer.from(secret.data.kubeconfig, 'base64').toString('utf8')) as Json;
    config.users[0].user['client-key-data'] = Buffer.from(privateKeyPem).toString('base64');
    const file = await tempFile('hub-tfr.kubeconfig', stringify(config));
    const certificate = new X509Certificate(Buffer.from(secret.data['tls.crt'], 'base64').toString('utf8'));
    // ca.crt: the API server's CA (--api-server-ca), the one the kubeconfig trusts.
    expect(Buffer.from(secret.data['ca.crt'], 'base64').toString('utf8')).toBe(
      await readFile(e2eContext().controlPlane.caFile, 'utf8'),
    );
    expect(secret.data['ca.crt']).toBe(config.clusters[0].cluster['certificate-authority-data']);
    expect(certificate.subject.split('\n').sort()).toEqual([`CN=${CONSUMER}`, `O=${GROUP}`]);
    const who = await whoami(file);
    expect(who.username).toBe(CONSUMER);
    expect(who.groups).toContain(GROUP);
    expect((await kubectl(file, ['auth', 'can-i', 'create', 'certificatesigningrequests'])).stdout.trim()).toBe('no');
  }, 90_000);

  it("the answered Tenant's spec applied again under another name (a replayed nonce): ERR_TENANT_NONCE_REUSED after the grace period, no Identity", async () => {
    await applyTenant(step2Spec, 'replayed');
    const refused = await until('ERR_TENANT_NONCE_REUSED', 30_000, 'replayed');
    expect(refused.status.identityRef).toBeUndefined();
    const identity = await kubectl(e2eContext().controlPlane.adminKubeconfig, [
      'get',
      'identities.credentials.clusterprofile.io',
      'replayed',
      '-n',
      NS,
    ]);
    expect(identity.stderr).toContain('NotFound');
    // Both replicas found the nonce spent; neither issued.
    expect(replicas.map((r) => (r.log().match(/certificate issued/g) ?? []).length).reduce((a, b) => a + b, 0)).toBe(1);
  }, 60_000);
});
