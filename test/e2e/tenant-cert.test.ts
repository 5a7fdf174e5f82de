/**
 * tenant-cert with the Kubernetes signer on the real control plane: `clusterprofile issuer serve --signer kubernetes`
 * runs as a process whose identity holds only deploy/overlays/csr-signer/issuer-rbac.yaml's ClusterRole; for each
 * Tenant it creates a CertificateSigningRequest, approves it itself and kube-controller-manager signs it with the
 * cluster's client CA. The consumer's certificate is then presented by kubectl (kubeconfig rendered by
 * `clusterprofile kubeconfig --profile`) and by client-node through buildConfigFromClusterProfile (the built package,
 * dist/), and RBAC limits what it may do.
 */
import { X509Certificate } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { AuthenticationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfigFromClusterProfile, loadAccessConfig, type ClusterProfile } from '../../dist/library/index.js';
import {
  applyAsAdmin,
  clusterProfileDocument,
  e2eContext,
  exec,
  kubectl,
  tempFile,
  whoami,
} from '../helpers/controlplane-e2e.js';
import {
  adminKubectl,
  CLUSTERPROFILE_BIN,
  startE2eIssuer,
  TENANT_CERT_BIN,
  tempDir,
  type E2eIssuer,
} from './fixtures/tenant-cert-issuer.js';

const PROVIDER = 'member-tc';
const CONSUMER = 'hub-tc';
const GROUP = 'fleet-tenants';
const NAMESPACE = 'tc-workloads';

let setup: E2eIssuer;
let cacheDir: string;
let profileFile: string;
let providersFile: string;

beforeAll(async () => {
  const { controlPlane } = e2eContext();
  setup = await startE2eIssuer({
    suffix: 'tc',
    providerClusterID: PROVIDER,
    consumerClusterID: CONSUMER,
    groups: [GROUP],
  });
  cacheDir = await tempDir('kubecache');
  await adminKubectl(['create', 'namespace', NAMESPACE]);
  // The consumer may read configmaps in one namespace, nothing else.
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'consumer-configmaps', namespace: NAMESPACE },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'consumer-configmaps', namespace: NAMESPACE },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'consumer-configmaps' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: CONSUMER }],
      },
    ],
  });
  await adminKubectl(['create', 'configmap', 'hello', '-n', NAMESPACE, '--from-literal=greeting=from-the-member']);

  const profile = clusterProfileDocument({
    name: PROVIDER,
    namespace: 'fleet',
    provider: 'tenant-cert',
    server: controlPlane.server,
    caPem: await readFile(controlPlane.caFile, 'utf8'),
    execExtension: setup.config,
  });
  profileFile = await tempFile('member-tc.yaml', stringify(profile));
  providersFile = await tempFile(
    'providers.json',
    JSON.stringify({
      providers: [
        {
          name: 'tenant-cert',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [TENANT_CERT_BIN, '--cluster-id', CONSUMER, '--key-file', setup.keyFile, '--cache-dir', cacheDir],
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
        },
      ],
    }),
  );
}, 60_000);

afterAll(async () => {
  await setup?.issuer.stop();
});

describe('tenant-cert with the Kubernetes signer (CSR approved by the issuer, signed by kube-controller-manager)', () => {
  it("the issuer's identity is the ServiceAccount of deploy/overlays/csr-signer/issuer-rbac.yaml, limited to CSRs", async () => {
    expect((await whoami(setup.issuerKubeconfig)).username).toBe(setup.issuerUser);
    const cannot = await kubectl(setup.issuerKubeconfig, ['get', 'secrets', '-n', 'kube-system']);
    expect(cannot.code).toBe(1);
    expect(cannot.stderr).toContain('Forbidden');
    // It may not even list CSRs (get by name only) — the manifest's rights are exactly create/get/delete.
    const list = await kubectl(setup.issuerKubeconfig, ['get', 'csr']);
    expect(list.stderr).toContain(`User "${setup.issuerUser}" cannot list resource "certificatesigningrequests"`);
  });

  it('kubectl with the kubeconfig rendered by `clusterprofile kubeconfig --profile` is the consumer; RBAC holds', async () => {
    const rendered = await exec(process.execPath, [
      CLUSTERPROFILE_BIN,
      'kubeconfig',
      '--profile',
      profileFile,
      '--clusterprofile-provider-file',
      providersFile,
    ]);
    expect(rendered.stderr).toBe('');
    expect(rendered.code).toBe(0);
    const kubeconfig = await tempFile('member-tc.kubeconfig', rendered.stdout);

    const identity = await whoami(kubeconfig);
    expect(identity.username).toBe(CONSUMER);
    expect(identity.groups.sort()).toEqual([GROUP, 'system:authenticated'].sort());

    const allowed = await kubectl(kubeconfig, [
      'get',
      'configmap',
      'hello',
      '-n',
      NAMESPACE,
      '-o',
      'jsonpath={.data.greeting}',
    ]);
    expect(allowed.stderr).toBe('');
    expect(allowed.stdout).toBe('from-the-member');
    const secrets = await kubectl(kubeconfig, ['get', 'secrets', '-n', NAMESPACE]);
    expect(secrets.code).toBe(1);
    expect(secrets.stderr).toContain(
      `User "${CONSUMER}" cannot list resource "secrets" in API group "" in the namespace "${NAMESPACE}"`,
    );
    const elsewhere = await kubectl(kubeconfig, ['get', 'configmaps', '-n', 'default']);
    expect(elsewhere.stderr).toContain(
      `User "${CONSUMER}" cannot list resource "configmaps" in API group "" in the namespace "default"`,
    );

    // The certificate in the plugin's cache is the cluster's: signed by the control plane's client CA (the CSR
    // signer), CN = consumer, O = the issuer's group, at most kube-controller-manager's 10 minutes (+5 backdated).
    const cached = readdirSync(cacheDir, { recursive: true })
      .map(String)
      .filter((name) => name.endsWith('.json'));
    expect(cached).toHaveLength(1);
    const entry = JSON.parse(await readFile(path.join(cacheDir, cached[0]!), 'utf8')) as {
      status: { clientCertificateData: string };
    };
    const certificate = new X509Certificate(entry.status.clientCertificateData);
    const clientCa = new X509Certificate(await readFile(e2eContext().controlPlane.clientCaCertFile, 'utf8'));
    expect(certificate.checkIssued(clientCa) && certificate.verify(clientCa.publicKey)).toBe(true);
    expect(certificate.subject.split('\n').sort()).toEqual([`CN=${CONSUMER}`, `O=${GROUP}`]);
    expect(Date.parse(certificate.validTo) - Date.parse(certificate.validFrom)).toBeLessThanOrEqual(15 * 60_000);
    // The issuer deleted its CSR after reading the certificate.
    const csrs = JSON.parse(await adminKubectl(['get', 'csr', '-o', 'json'])) as {
      items: Array<{ metadata: { name: string } }>;
    };
    expect(
      csrs.items.map((item) => item.metadata.name).filter((name) => name.startsWith(`clusterprofile-${CONSUMER}-`)),
    ).toEqual([]);
  });

  it('client-node through buildConfigFromClusterProfile (dist/) is the consumer; a call outside its Role is 403', async () => {
    const profile = parse(await readFile(profileFile, 'utf8')) as ClusterProfile;
    const kc = buildConfigFromClusterProfile(profile, await loadAccessConfig(providersFile));
    const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(review.status?.userInfo?.username).toBe(CONSUMER);
    expect(review.status?.userInfo?.groups?.sort()).toEqual([GROUP, 'system:authenticated'].sort());
    const core = kc.makeApiClient(CoreV1Api);
    const configmaps = await core.listNamespacedConfigMap({ namespace: NAMESPACE });
    expect(configmaps.items.map((item) => item.metadata?.name)).toContain('hello');
    const refused = await core.listNamespacedSecret({ namespace: NAMESPACE }).then(
      () => undefined,
      (error: unknown) => error as { code?: number; body?: string },
    );
    expect(refused?.code).toBe(403);
    expect(String(refused?.body)).toContain(`User \\"${CONSUMER}\\" cannot list resource \\"secrets\\"`);
  });
});
