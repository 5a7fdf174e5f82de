/**
 * ClusterProfileFleet on each producer recipe's profile (examples/producers/), stored unchanged on the real control
 * plane in the producer's own namespace, with the recipe's providers file (only a command or a file path pointed at
 * this machine): GKE (gcp-auth-plugin stood in for by a script printing what it prints), KubeFleet (token-request from
 * the providers file alone: the profile has no exec extension) and Liqo (tenant-cert). What the fleet reports is what
 * the producer's profile gives it; a KubeFleet profile whose server is this control plane shows the whole path. (One
 * without a server, what KubeFleet writes before a member reports its entry point, is refused by this CRD's CEL rule
 * before any reader sees it; the library's own refusal is in test/unit/resolve-cluster-access.test.ts.) The OCM recipe runs against OCM's own controllers in test/e2e/ocm.test.ts.
 */
import { chmod, readFile } from 'node:fs/promises';
import path from 'node:path';
import { AuthenticationV1Api } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClusterProfileFleet,
  type AccessConfig,
  type ClusterProfile,
  type FleetClusterStatus,
} from '../../src/library/index.js';
import { applyAsAdmin, clientCertKubeconfig, e2eContext, tempFile } from '../helpers/controlplane-e2e.js';
import { adminKubectl, REPO, templatedManifest } from './fixtures/tenant-cert-issuer.js';
import { CLI, runNode } from '../helpers/tenant-cert-plugin-run.js';

const RECIPES = path.join(REPO, 'examples/producers');
const crdFile = path.join(REPO, 'schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml');
const KUBEFLEET_BOOTSTRAP = 'e2e-kubefleet-hub';

interface Recipe {
  profile: ClusterProfile & { metadata: { name: string; namespace: string } };
  providers: AccessConfig;
}

async function recipe(name: string): Promise<Recipe> {
  return {
    profile: parse(await readFile(path.join(RECIPES, name, 'clusterprofile.yaml'), 'utf8')) as Recipe['profile'],
    providers: JSON.parse(await readFile(path.join(RECIPES, name, 'providers.json'), 'utf8')) as AccessConfig,
  };
}

/** Stores a profile with its status, as its producer would (status through the subresource). */
async function store(profile: Recipe['profile']): Promise<void> {
  const { status, ...rest } = profile;
  await applyAsAdmin(rest);
  await adminKubectl([
    'patch',
    'clusterprofile',
    profile.metadata.name,
    '-n',
    profile.metadata.namespace,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
  ]);
}

/** A fleet on `namespace` until it settles; its rows by name, and the fleet (closed by the caller). */
async function settledFleet(
  namespace: string,
  accessConfig: AccessConfig,
): Promise<{ fleet: ClusterProfileFleet; rows: Record<string, FleetClusterStatus> }> {
  const { controlPlane } = e2eContext();
  const fleet = new ClusterProfileFleet({
    namespace,
    accessConfig,
    hub: { kubeconfig: controlPlane.adminKubeconfig },
    env: { PATH: process.env['PATH'] ?? '', HOME: path.dirname(await tempFile('.home', '')) },
    fetchTimeoutMs: 20_000,
  });
  await fleet.start();
  await fleet.settled();
  return { fleet, rows: Object.fromEntries(fleet.status().clusters.map((row) => [row.name, row])) };
}

const namespaces = ['fleet-cluster-inventory', 'fleet-system', 'liqo-inventory', 'fleet-workloads'];

/** The namespaces this file made (another e2e file may own one of the same name, e.g. `fleet`: left alone). */
const created: string[] = [];

beforeAll(async () => {
  await adminKubectl(['apply', '-f', crdFile]);
  await adminKubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', crdFile]);
  for (const ns of namespaces) {
    const exists = await adminKubectl(['get', 'namespace', ns]).then(
      () => true,
      () => false,
    );
    if (exists) continue;
    await adminKubectl(['create', 'namespace', ns]);
    created.push(ns);
  }
}, 120_000);

afterAll(async () => {
  for (const ns of created) await adminKubectl(['delete', 'namespace', ns, '--wait=false']).catch(() => undefined);
});

describe('the fleet on each recipe’s profile, unchanged', () => {
  it('GKE: the `google` provider runs gcp-auth-plugin; the member is ready with the plugin’s expiry', async () => {
    const { profile, providers } = await recipe('gke');
    const standIn = await tempFile(
      'gcp-auth-plugin',
      `#!${process.execPath}
const expirationTimestamp = new Date(Math.floor(Date.now() / 1000) * 1000 + 3599000).toISOString().replace('.000Z', 'Z');
process.stdout.write(JSON.stringify({ kind: 'ExecCredential', apiVersion: 'client.authentication.k8s.io/v1beta1', spec: { interactive: false }, status: { expirationTimestamp, token: 'ya29.stand-in' } }) + '\\n');
`,
    );
    await chmod(standIn, 0o700);
    for (const entry of providers.providers ?? []) entry.execConfig!.command = standIn;
    await store(profile);
    const { fleet, rows } = await settledFleet(profile.metadata.namespace, providers);
    try {
      const row = rows[profile.metadata.name];
      expect(row, JSON.stringify(row)).toMatchObject({ state: 'ready', provider: 'google', mode: 'exec', fetches: 1 });
      expect(Date.parse(row!.credentialExpiresAt!)).toBeGreaterThan(Date.now() + 3_000_000);
    } finally {
      await fleet.close();
    }
  });

  it('KubeFleet: token-request from the providers file alone reaches a member as the recipe’s service account', async () => {
    const { controlPlane } = e2eContext();
    const { profile, providers } = await recipe('kubefleet');
    // The bootstrap identity may mint tokens for the recipe's service account (deploy/token-request-rbac.yaml).
    await applyAsAdmin(
      await templatedManifest('deploy/token-request-rbac.yaml', [
        ['fleet-workload', 'hub-controller'],
        ['fleet', 'fleet-workloads'],
        ['hub-cluster', KUBEFLEET_BOOTSTRAP],
      ]),
    );
    const bootstrap = await clientCertKubeconfig(KUBEFLEET_BOOTSTRAP);
    const args = providers.providers![0]!.execConfig!.args!;
    providers.providers![0]!.execConfig!.args = args.map((arg) =>
      arg.startsWith('--bootstrap-kubeconfig=') ? `--bootstrap-kubeconfig=${bootstrap}` : arg,
    );
    await store(profile);
    // The same member as KubeFleet writes it when its entry point is this control plane.
    const reachable = structuredClone(profile);
    reachable.metadata.name = 'member-here';
    reachable.status!.accessProviders![0]!.cluster = {
      server: controlPlane.server,
      'certificate-authority-data': Buffer.from(await readFile(controlPlane.caFile)).toString('base64'),
    };
    await store(reachable);
    const { fleet, rows } = await settledFleet(profile.metadata.namespace, providers);
    try {
      expect(rows['member-here'], JSON.stringify(rows['member-here'])).toMatchObject({
        state: 'ready',
        provider: 'KubeFleet',
        mode: 'in-process',
      });
      const review = await fleet
        .get('member-here')!
        .client!.makeApiClient(AuthenticationV1Api)
        .createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
      expect(review.status?.userInfo?.username).toBe('system:serviceaccount:fleet-workloads:hub-controller');
      // The recipe's own member: an AKS name this machine cannot reach.
      expect(rows['member-1']).toMatchObject({ state: 'failing', provider: 'KubeFleet' });
      expect(rows['member-1']?.lastError?.message).toContain('member-1-dns-1a2b3c4d.hcp.eastus.azmk8s.io');
    } finally {
      await fleet.close();
    }
  });

  it('Liqo: tenant-cert runs on the profile; without an imported Identity, a coded error naming the field', async () => {
    const { profile, providers } = await recipe('liqo');
    const keyFile = await tempFile('consumer.key', '');
    const keygen = await runNode(CLI, ['keygen', '--out', keyFile, '--algorithm', 'ecdsa-p256', '--force']);
    expect(keygen.code, keygen.stderr).toBe(0);
    const args = providers.providers![0]!.execConfig!.args!;
    providers.providers![0]!.execConfig!.args = [
      ...args.map((arg) => (arg.startsWith('--key-file=') ? `--key-file=${keyFile}` : arg)),
      `--identity-dir=${path.join(path.dirname(keyFile), 'identities')}`,
    ];
    await store(profile);
    const { fleet, rows } = await settledFleet(profile.metadata.namespace, providers);
    try {
      expect(rows[profile.metadata.name]).toMatchObject({
        state: 'failing',
        provider: 'tenant-cert',
        lastError: { code: 'ERR_TENANT_CERT_NO_ISSUER' },
      });
      expect(fleet.get(profile.metadata.name)?.error).toMatchObject({ path: 'spec.cluster.config.issuerURL' });
    } finally {
      await fleet.close();
    }
  });
});
