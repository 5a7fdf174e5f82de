/**
 * deploy/ as `kubectl kustomize` renders it (kustomize built into kubectl): each overlay is a complete, consistent
 * installation of the issuer — the Deployment's flags exist in the CLI and agree with its ports, probes and mounts;
 * the Service, PodDisruptionBudget and NetworkPolicy select its pods; RBAC binds the ServiceAccount it runs as; only
 * the CSR-signer overlay holds cluster-wide rights. (Applying them to a real API server: test/e2e/deploy-manifests.test.ts.)
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { cli, ROOT } from '../helpers/issuer-process.js';

const run = promisify(execFile);
type Json = Record<string, any>;

async function render(dir: string): Promise<Json[]> {
  const { stdout } = await run('kubectl', ['kustomize', dir], { cwd: ROOT });
  return parseAllDocuments(stdout).map((doc) => doc.toJSON() as Json);
}

const NAMESPACE = 'clusterprofile-system';
/** Flags the Deployment passes that the state backend (`--state kubernetes --namespace NS`) brings to the CLI. */

function one(objects: Json[], kind: string): Json {
  const found = objects.filter((object) => object['kind'] === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
}

function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels[key] === value);
}

describe.each([
  ['embedded-ca', 'embedded'],
  ['csr-signer', 'kubernetes'],
])('deploy/overlays/%s', (overlay, signer) => {
  it('renders one consistent installation: Deployment (2 replicas, probes, limits, hardened), Service, PDB, NetworkPolicy, serving Secret mounted', async () => {
    const objects = await render(`deploy/overlays/${overlay}`);
    for (const object of objects) {
      if (!['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition'].includes(object['kind'])) {
        expect(object['metadata']['namespace'], `${object['kind']} ${object['metadata']['name']}`).toBe(NAMESPACE);
      }
    }
    one(objects, 'Namespace');
    const deployment = one(objects, 'Deployment');
    const pod = deployment['spec']['template'];
    const podLabels = pod['metadata']['labels'] as Record<string, string>;
    expect(deployment['spec']['replicas']).toBe(2);
    expect(selects(deployment['spec']['selector']['matchLabels'], podLabels)).toBe(true);

    const container = pod['spec']['containers'][0];
    const args = container['args'] as string[];
    expect(args.slice(0, 2)).toEqual(['issuer', 'serve']);
    const flags = new Map(args.slice(2).map((arg) => [arg.split('=')[0]!, arg.slice(arg.indexOf('=') + 1)] as const));
    expect(flags.get('--state')).toBe('kubernetes');
    expect(flags.get('--signer')).toBe(signer);
    expect(flags.get('--log-format')).toBe('json');

    // Every flag is one `clusterprofile issuer serve` knows.
    const help = await cli(['issuer', '--help']);
    for (const flag of flags.keys()) {
      expect(help.stdout, flag).toContain(`${flag} `);
    }
    // Every $(VAR) in the args is an env var of the container.
    const env = new Set((container['env'] as Json[]).map((entry) => entry['name']));
    for (const reference of args.join(' ').matchAll(/\$\((\w+)\)/g))
      expect(env.has(reference[1]), reference[1]).toBe(true);
    const configMap = one(objects, 'ConfigMap');
    for (const entry of container['env'] as Json[]) {
      const ref = entry['valueFrom']?.['configMapKeyRef'];
      if (ref !== undefined) {
        expect(ref['name']).toBe(configMap['metadata']['name']);
        expect(configMap['data']).toHaveProperty(ref['key']);
      }
    }

    // Ports, probes.
    const ports = new Map((container['ports'] as Json[]).map((port) => [port['name'], port['containerPort']]));
    expect(flags.get('--listen')).toBe(`0.0.0.0:${ports.get('https')}`);
    expect(flags.get('--metrics-listen')).toBe(`0.0.0.0:${ports.get('metrics')}`);
    expect(container['readinessProbe']['httpGet']).toEqual({ path: '/readyz', port: 'https', scheme: 'HTTPS' });
    expect(container['livenessProbe']['httpGet']).toEqual({ path: '/healthz', port: 'https', scheme: 'HTTPS' });
    expect(container['resources']['requests']).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container['resources']['limits']).toHaveProperty('memory');
    const grace = Number(/^(\d+)s$/.exec(flags.get('--shutdown-grace') ?? '')?.[1]);
    expect(pod['spec']['terminationGracePeriodSeconds']).toBeGreaterThan(
      grace + (container['lifecycle']?.['preStop']?.['sleep']?.['seconds'] ?? 0),
    );

    // Hardened: non-root, read-only root, no capabilities, no privilege escalation.
    expect(pod['spec']['securityContext']).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container['securityContext']).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });

    // The serving pair comes from a kubernetes.io/tls Secret mounted where --tls-cert-file/--tls-key-file point.
    const volumes = new Map((pod['spec']['volumes'] as Json[]).map((volume) => [volume['name'], volume]));
    const mounts = container['volumeMounts'] as Json[];
    const tlsMount = mounts.find((mount) => volumes.get(mount['name'])?.['secret'] !== undefined)!;
    expect(tlsMount['readOnly']).toBe(true);
    expect(flags.get('--tls-cert-file')).toBe(`${tlsMount['mountPath']}/tls.crt`);
    expect(flags.get('--tls-key-file')).toBe(`${tlsMount['mountPath']}/tls.key`);
    expect(volumes.get(tlsMount['name'])?.['secret']['secretName']).toBe('clusterprofile-issuer-serving');
    // Every writable path is an emptyDir (the root file system is read-only).
    for (const mount of mounts.filter((m) => m['readOnly'] !== true))
      expect(volumes.get(mount['name'])).toHaveProperty('emptyDir');
    // The state is in the API server: no data dir (the CLI refuses one with --state kubernetes); the Tenants are answered.
    expect(flags.has('--data-dir')).toBe(false);
    expect(flags.has('--reconcile-tenants')).toBe(true);
    for (const crd of ['tenants.credentials.clusterprofile.io', 'identities.credentials.clusterprofile.io']) {
      expect(
        objects.some((object) => object['kind'] === 'CustomResourceDefinition' && object['metadata']['name'] === crd),
        crd,
      ).toBe(true);
    }

    // Service, PDB and NetworkPolicy select exactly these pods, on the container's ports.
    const service = one(objects, 'Service');
    expect(selects(service['spec']['selector'], podLabels)).toBe(true);
    expect((service['spec']['ports'] as Json[]).map((port) => port['targetPort']).sort()).toEqual(
      [...ports.keys()].sort(),
    );
    const pdb = one(objects, 'PodDisruptionBudget');
    expect(selects(pdb['spec']['selector']['matchLabels'], podLabels)).toBe(true);
    expect(pdb['spec']['minAvailable']).toBe(1);
    const policy = one(objects, 'NetworkPolicy');
    expect(selects(policy['spec']['podSelector']['matchLabels'], podLabels)).toBe(true);
    expect(policy['spec']['policyTypes']).toEqual(['Ingress', 'Egress']);
    const allowedPorts = (policy['spec']['ingress'] as Json[]).flatMap((rule) =>
      (rule['ports'] as Json[]).map((port) => port['port']),
    );
    expect(allowedPorts.sort()).toEqual([...ports.values()].sort());
    // Metrics only from a selected namespace, not from everywhere.
    const metricsRule = (policy['spec']['ingress'] as Json[]).find((rule) =>
      rule['ports'].some((port: Json) => port['port'] === ports.get('metrics')),
    )!;
    expect(metricsRule['from']).toBeDefined();
  });

  it('RBAC: every binding names the ServiceAccount the Deployment runs as; cluster-wide rights only for the CSR signer, and only on CSRs', async () => {
    const objects = await render(`deploy/overlays/${overlay}`);
    const account = one(objects, 'Deployment')['spec']['template']['spec']['serviceAccountName'];
    expect(one(objects, 'ServiceAccount')['metadata']['name']).toBe(account);
    const bindings = objects.filter(
      (object) => object['kind'] === 'RoleBinding' || object['kind'] === 'ClusterRoleBinding',
    );
    expect(bindings.length).toBeGreaterThanOrEqual(2);
    for (const binding of bindings) {
      expect(binding['subjects']).toEqual([{ kind: 'ServiceAccount', name: account, namespace: NAMESPACE }]);
      const role = objects.find(
        (object) =>
          object['kind'] === binding['roleRef']['kind'] && object['metadata']['name'] === binding['roleRef']['name'],
      );
      expect(role, `${binding['metadata']['name']} → ${binding['roleRef']['name']}`).toBeDefined();
    }
    const clusterRoles = objects.filter((object) => object['kind'] === 'ClusterRole');
    if (signer === 'embedded') {
      expect(clusterRoles).toEqual([]);
      expect(objects.filter((object) => object['kind'] === 'ClusterRoleBinding')).toEqual([]);
    } else {
      expect(clusterRoles).toHaveLength(1);
      for (const rule of clusterRoles[0]!['rules'] as Json[])
        expect(rule['apiGroups']).toEqual(['certificates.k8s.io']);
    }
    for (const object of objects) {
      for (const rule of (object['rules'] ?? []) as Json[]) {
        expect(rule['verbs']).not.toContain('*');
        expect(rule['resources']).not.toContain('*');
        expect(rule['apiGroups']).not.toContain('*');
      }
    }
  });
});

it('the RBAC manifests other docs point at stay where they were (secret reader, token request)', async () => {
  for (const file of ['deploy/secret-reader-rbac.yaml', 'deploy/token-request-rbac.yaml']) {
    const objects = parseAllDocuments(await readFile(join(ROOT, file), 'utf8')).map((doc) => doc.toJSON() as Json);
    expect(
      objects.map((object) => object['kind']),
      file,
    ).toContain('RoleBinding');
  }
});
