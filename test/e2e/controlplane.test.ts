/**
 * Proves the e2e harness itself against the real control plane: who the API server says we are, that RBAC refuses
 * what was not granted, and that kube-controller-manager signs approved kube-apiserver-client CSRs with the client CA
 * so the certificate it returns authenticates.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import { Agent, fetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { createCsr } from '../helpers/controlplane-pki.js';
import { clientCertKubeconfig as kubeconfigDocument } from '../helpers/controlplane.js';
import {
  applyAsAdmin,
  clientCertKubeconfig,
  e2eContext,
  kubectl,
  tempFile,
  tokenKubeconfig,
  whoami,
} from '../helpers/controlplane-e2e.js';

describe('e2e control plane', () => {
  it('admin kubeconfig authenticates as e2e-admin in system:masters', async () => {
    const { controlPlane } = e2eContext();
    const me = await whoami(controlPlane.adminKubeconfig);
    expect(me.username).toBe('e2e-admin');
    expect(me.groups).toContain('system:masters');
    expect(me.groups).toContain('system:authenticated');
  });

  it('a client certificate from the client CA authenticates, and RBAC refuses what was not granted (403)', async () => {
    const kubeconfig = await clientCertKubeconfig('alice', ['e2e-devs']);
    const me = await whoami(kubeconfig);
    expect(me.username).toBe('alice');
    expect(me.groups).toEqual(expect.arrayContaining(['e2e-devs', 'system:authenticated']));

    const secrets = await kubectl(kubeconfig, ['get', '--raw', '/api/v1/namespaces/default/secrets']);
    expect(secrets.code).not.toBe(0);
    expect(secrets.stderr).toMatch(/Forbidden|forbidden/);
    expect(secrets.stderr).toContain('User "alice" cannot list resource "secrets"');

    // What is granted works; the grant is exactly that wide.
    await applyAsAdmin({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'e2e-configmap-reader', namespace: 'default' },
          rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'e2e-alice-configmap-reader', namespace: 'default' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'e2e-configmap-reader' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
        },
      ],
    });
    const configmaps = await kubectl(kubeconfig, ['get', '--raw', '/api/v1/namespaces/default/configmaps']);
    expect(configmaps.stderr).toBe('');
    expect(JSON.parse(configmaps.stdout)).toMatchObject({ kind: 'ConfigMapList' });
    const stillForbidden = await kubectl(kubeconfig, ['get', '--raw', '/api/v1/namespaces/kube-system/configmaps']);
    expect(stillForbidden.code).not.toBe(0);
    expect(stillForbidden.stderr).toContain('cannot list resource "configmaps"');
  });

  it('kube-controller-manager signs an approved kube-apiserver-client CSR with the client CA; the certificate authenticates', async () => {
    const { controlPlane } = e2eContext();
    const name = `e2e-csr-${Date.now()}`;
    const { csr, key } = await createCsr('bob', ['e2e-team']);
    await applyAsAdmin({
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: {
        request: Buffer.from(csr).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client',
        usages: ['client auth'],
        expirationSeconds: 600,
      },
    });
    // Not approved: kube-controller-manager's approver only handles kubelet CSRs, so nothing is signed yet.
    const pending = await kubectl(controlPlane.adminKubeconfig, [
      'get',
      'csr',
      name,
      '-o',
      'jsonpath={.status.certificate}',
    ]);
    expect(pending.stdout).toBe('');

    const approve = await kubectl(controlPlane.adminKubeconfig, ['certificate', 'approve', name]);
    expect(approve.stderr).toBe('');
    let certificate = '';
    for (const deadline = Date.now() + 60_000; certificate === '' && Date.now() < deadline; ) {
      const got = await kubectl(controlPlane.adminKubeconfig, [
        'get',
        'csr',
        name,
        '-o',
        'jsonpath={.status.certificate}',
      ]);
      certificate = got.stdout.trim();
      if (certificate === '') await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(certificate).not.toBe('');
    const pem = Buffer.from(certificate, 'base64').toString('utf8');

    const issued = new X509Certificate(pem);
    const clientCa = new X509Certificate(await readFile(controlPlane.clientCaCertFile));
    expect(issued.checkIssued(clientCa)).toBe(true);
    expect(issued.subject).toContain('CN=bob');
    const lifetimeSeconds = (Date.parse(issued.validTo) - Date.parse(issued.validFrom)) / 1000;
    expect(lifetimeSeconds).toBeLessThanOrEqual(600 + 300); // expirationSeconds, plus the signer's backdating

    const caPem = await readFile(controlPlane.caFile, 'utf8');
    const kubeconfig = await tempFile(
      'bob.kubeconfig',
      stringify(kubeconfigDocument(controlPlane.server, caPem, 'bob', { cert: pem, key })),
    );
    const me = await whoami(kubeconfig);
    expect(me.username).toBe('bob');
    expect(me.groups).toContain('e2e-team');
  });

  it('structured authentication trusts the test OpenID Provider: its JWT access token authenticates with the oidc: prefix', async () => {
    const { oidc } = e2eContext();
    const dispatcher = new Agent({ connect: { ca: oidc.caPem } });
    const discovery = (await (
      await fetch(`${oidc.issuer}/.well-known/openid-configuration`, { dispatcher })
    ).json()) as { token_endpoint: string };
    const client = oidc.clients.basic ?? {};
    const response = await fetch(discovery.token_endpoint, {
      dispatcher,
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', resource: oidc.audience }).toString(),
    });
    const body = (await response.json()) as { access_token?: string };
    expect(response.status, JSON.stringify(body)).toBe(200);
    await dispatcher.close();

    const kubeconfig = await tokenKubeconfig('oidc-machine', body.access_token ?? '');
    const me = await whoami(kubeconfig);
    expect(me.username).toBe(`${oidc.usernamePrefix}${client.clientId}`);
    expect(me.groups).toContain(`${oidc.groupsPrefix}machines`);
    const secrets = await kubectl(kubeconfig, ['get', 'secrets', '-n', 'default']);
    expect(secrets.stderr).toContain('cannot list resource "secrets"');
  });

  it('the service-account issuer works: a TokenRequest token authenticates as the service account', async () => {
    const { controlPlane } = e2eContext();
    await applyAsAdmin({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'e2e-robot', namespace: 'default' },
    });
    const minted = await kubectl(controlPlane.adminKubeconfig, [
      'create',
      'token',
      'e2e-robot',
      '-n',
      'default',
      '--duration=10m',
      '--audience',
      controlPlane.serviceAccountIssuer,
    ]);
    expect(minted.stderr).toBe('');
    const token = minted.stdout.trim();
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      iss: string;
      exp: number;
      iat: number;
    };
    expect(claims.iss).toBe(controlPlane.serviceAccountIssuer);
    expect(claims.exp - claims.iat).toBe(600);

    const me = await whoami(await tokenKubeconfig('e2e-robot', token));
    expect(me.username).toBe('system:serviceaccount:default:e2e-robot');
    expect(me.groups).toEqual(expect.arrayContaining(['system:serviceaccounts', 'system:serviceaccounts:default']));
  });
});
