/**
 * The generated ClusterProfile CRD on a real API server, as cluster managers use it: installed with server-side apply,
 * `status.accessProviders` shared by field managers that each apply their own entry through the status subresource
 * (the list is keyed by name, as upstream's since v0.1.0), ownership kept when a hub swaps upstream's CRD and ours, and
 * the v1alpha2 rules (CEL on server / proxy-url / clusterManager.name, at most 64 providers, unique names) enforced by
 * the API server.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eContext, kubectl, type ExecResult } from '../helpers/controlplane-e2e.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const ourCrd = path.join(repo, 'schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml');
const upstreamCrd = path.join(
  repo,
  'test/fixtures/upstream/cluster-inventory-api-v0.1.0/multicluster.x-k8s.io_clusterprofiles.yaml',
);
const CRD = 'crd/clusterprofiles.multicluster.x-k8s.io';
const NAMESPACE = 'crd-ssa';
const INSTALLER = 'e2e-crd-installer';

type Json = Record<string, any>;

function admin(args: string[], input?: string): Promise<ExecResult> {
  const { controlPlane } = e2eContext();
  return kubectl(controlPlane.adminKubeconfig, args, input === undefined ? {} : { input });
}

async function adminOk(args: string[], input?: string): Promise<string> {
  const result = await admin(args, input);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** Server-side apply of `object` to the status subresource, as field manager `manager`. */
function applyStatus(manager: string, object: Json): Promise<ExecResult> {
  return admin(
    ['apply', '--server-side', '--subresource=status', `--field-manager=${manager}`, '-f', '-'],
    JSON.stringify(object),
  );
}

async function applyStatusOk(manager: string, object: Json): Promise<void> {
  const result = await applyStatus(manager, object);
  if (result.code !== 0) throw new Error(`status apply by ${manager}: ${result.stderr}`);
}

/** Installs a CRD file with server-side apply and waits until it serves. */
async function installCrd(file: string, options: { force?: boolean } = {}): Promise<string> {
  const out = await adminOk([
    'apply',
    '--server-side',
    `--field-manager=${INSTALLER}`,
    ...(options.force ? ['--force-conflicts'] : []),
    '-f',
    file,
  ]);
  await adminOk(['wait', '--for=condition=Established', '--timeout=60s', CRD]);
  return out;
}

async function getProfile(name: string, version = 'v1alpha1'): Promise<Json> {
  return JSON.parse(
    await adminOk([
      'get',
      `clusterprofiles.${version}.multicluster.x-k8s.io`,
      name,
      '-n',
      NAMESPACE,
      '-o',
      'json',
      '--show-managed-fields',
    ]),
  ) as Json;
}

async function createProfile(name: string, version = 'v1alpha1', manager = 'e2e'): Promise<void> {
  await adminOk(
    ['create', '-f', '-'],
    JSON.stringify({
      apiVersion: `multicluster.x-k8s.io/${version}`,
      kind: 'ClusterProfile',
      metadata: { name, namespace: NAMESPACE },
      spec: { displayName: name, clusterManager: { name: manager } },
    }),
  );
}

/** A status apply configuration: only what the manager means to own. */
function statusConfig(name: string, status: Json, version = 'v1alpha1'): Json {
  return {
    apiVersion: `multicluster.x-k8s.io/${version}`,
    kind: 'ClusterProfile',
    metadata: { name, namespace: NAMESPACE },
    status,
  };
}

function provider(name: string, cluster: Json = {}): Json {
  return { name, cluster: { server: `https://${name}.example.test:6443`, ...cluster } };
}

/** The `status.accessProviders` entry names each manager owns through Apply on the status subresource. */
function ownedEntries(profile: Json): Record<string, string[]> {
  const owned: Record<string, string[]> = {};
  for (const entry of profile.metadata.managedFields ?? []) {
    if (entry.operation !== 'Apply' || entry.subresource !== 'status') continue;
    const list = entry.fieldsV1?.['f:status']?.['f:accessProviders'] ?? {};
    owned[entry.manager] = Object.keys(list)
      .filter((key) => key.startsWith('k:'))
      .map((key) => (JSON.parse(key.slice(2)) as { name: string }).name)
      .sort();
  }
  return owned;
}

const names = (profile: Json): string[] =>
  (profile.status?.accessProviders ?? []).map((entry: Json) => entry.name).sort();

describe('the ClusterProfile CRD with server-side apply (real kube-apiserver)', () => {
  beforeAll(async () => {
    const out = await installCrd(ourCrd);
    expect(out).toContain(
      'customresourcedefinition.apiextensions.k8s.io/clusterprofiles.multicluster.x-k8s.io serverside-applied',
    );
    await adminOk(['create', 'namespace', NAMESPACE]);
  });

  afterAll(async () => {
    // Leave our CRD installed and no ClusterProfile of ours behind for the other e2e files (hub.test.ts lists them all).
    await installCrd(ourCrd, { force: true });
    await adminOk(['delete', 'clusterprofiles', '--all', '-n', NAMESPACE, '--wait']);
    await adminOk(['delete', 'namespace', NAMESPACE, '--wait=false']);
  });

  it('installs with server-side apply; re-applying it is a no-op, and the served schema keeps the list keys', async () => {
    const before = JSON.parse(await adminOk(['get', CRD, '-o', 'json'])) as Json;
    await installCrd(ourCrd);
    const after = JSON.parse(await adminOk(['get', CRD, '-o', 'json'])) as Json;
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    const status = after.spec.versions.find((entry: Json) => entry.name === 'v1alpha1').schema.openAPIV3Schema
      .properties.status.properties;
    expect(status.accessProviders['x-kubernetes-list-map-keys']).toEqual(['name']);
    expect(after.spec.versions.map((entry: Json) => [entry.name, entry.served, entry.storage])).toEqual([
      ['v1alpha1', true, true],
      ['v1alpha2', true, false],
    ]);
  });

  it('two field managers each apply their own accessProviders entry; each owns its entry; A withdrawing its entry leaves B’s', async () => {
    await createProfile('shared');
    await applyStatusOk('manager-a', statusConfig('shared', { accessProviders: [provider('a')] }));
    // B applies a list without A's entry: no conflict, the lists merge by name.
    await applyStatusOk('manager-b', statusConfig('shared', { accessProviders: [provider('b')] }));

    let profile = await getProfile('shared');
    expect(names(profile)).toEqual(['a', 'b']);
    expect(ownedEntries(profile)).toEqual({ 'manager-a': ['a'], 'manager-b': ['b'] });

    // B updates its entry: A's is untouched.
    await applyStatusOk(
      'manager-b',
      statusConfig('shared', { accessProviders: [provider('b', { 'tls-server-name': 'b.internal' })] }),
    );
    profile = await getProfile('shared');
    expect(profile.status.accessProviders.find((entry: Json) => entry.name === 'a').cluster).toEqual({
      server: 'https://a.example.test:6443',
    });
    expect(profile.status.accessProviders.find((entry: Json) => entry.name === 'b').cluster['tls-server-name']).toBe(
      'b.internal',
    );

    // A applies again without its entry: the API server removes what only A owned.
    await applyStatusOk('manager-a', statusConfig('shared', {}));
    profile = await getProfile('shared');
    expect(names(profile)).toEqual(['b']);
    expect(ownedEntries(profile)).toEqual({ 'manager-a': [], 'manager-b': ['b'] });
  });

  it('a manager applying another manager’s entry with other values conflicts, unless it forces', async () => {
    await createProfile('contested');
    await applyStatusOk('manager-a', statusConfig('contested', { accessProviders: [provider('a')] }));
    const clash = await applyStatus(
      'manager-b',
      statusConfig('contested', { accessProviders: [provider('a', { server: 'https://elsewhere.example.test' })] }),
    );
    expect(clash.code).not.toBe(0);
    expect(clash.stderr).toContain('conflict with "manager-a"');
    expect(clash.stderr).toContain('.status.accessProviders[name="a"].cluster.server');
    expect((await getProfile('contested')).status.accessProviders).toEqual([provider('a')]);

    const forced = await admin(
      ['apply', '--server-side', '--subresource=status', '--field-manager=manager-b', '--force-conflicts', '-f', '-'],
      JSON.stringify(
        statusConfig('contested', { accessProviders: [provider('a', { server: 'https://elsewhere.example.test' })] }),
      ),
    );
    expect(forced.stderr).toBe('');
    const profile = await getProfile('contested');
    expect(profile.status.accessProviders).toEqual([provider('a', { server: 'https://elsewhere.example.test' })]);
    expect(ownedEntries(profile)).toEqual({ 'manager-a': ['a'], 'manager-b': ['a'] });
  });

  it('keeps each manager’s entry when a hub swaps between upstream’s v0.1.0 CRD and ours', async () => {
    await createProfile('swapped');
    await applyStatusOk('manager-a', statusConfig('swapped', { accessProviders: [provider('a')] }));
    await applyStatusOk('manager-b', statusConfig('swapped', { accessProviders: [provider('b')] }));

    for (const crd of [upstreamCrd, ourCrd]) {
      // Descriptions and our additions (v1alpha2, printer columns) differ, so taking over the CRD needs --force-conflicts.
      await installCrd(crd, { force: true });
      await applyStatusOk(
        'manager-b',
        statusConfig('swapped', { accessProviders: [provider('b', { 'disable-compression': crd === ourCrd })] }),
      );
      const profile = await getProfile('swapped');
      expect(names(profile), crd).toEqual(['a', 'b']);
      expect(ownedEntries(profile), crd).toEqual({ 'manager-a': ['a'], 'manager-b': ['b'] });
    }
  });

  describe('v1alpha2 rules, enforced by the API server', () => {
    beforeAll(async () => {
      await createProfile('strict', 'v1alpha2');
    });

    /** Applies `status` to the v1alpha2 profile as a probe manager; the result, and the stored providers after it. */
    async function probe(status: Json): Promise<ExecResult & { stored: string[] }> {
      const result = await applyStatus('probe', statusConfig('strict', status, 'v1alpha2'));
      return { ...result, stored: names(await getProfile('strict', 'v1alpha2')) };
    }

    it.each([
      [
        'an http server with a host (upstream asks for a URL with a host, not for https)',
        { server: 'http://plain.example.test:8080' },
      ],
      ['an IPv6 server', { server: 'https://[fd00::1]:6443' }],
      ['a socks5 proxy-url', { 'proxy-url': 'socks5://proxy.example.test:1080' }],
      ['an empty proxy-url', { 'proxy-url': '' }],
    ])('accepts %s', async (_what, cluster) => {
      const result = await probe({ accessProviders: [provider('ok', cluster)] });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stored).toEqual(['ok']);
    });

    it.each([
      [
        'a server that is not a URL',
        { server: 'api.example.test:6443' },
        'server must be a valid absolute URL with a host',
      ],
      ['a server without a host', { server: 'https://' }, 'server must be a valid absolute URL with a host'],
      [
        'a server longer than 2048 characters',
        { server: `https://${'a'.repeat(2048)}.test` },
        'Too long: may not be more than 2048 bytes',
      ],
      [
        'an ftp proxy-url',
        { 'proxy-url': 'ftp://proxy.example.test' },
        'proxy-url must be a valid URL with scheme http, https, or socks5 and a host',
      ],
      [
        'a proxy-url without a host',
        { 'proxy-url': 'http://' },
        'proxy-url must be a valid URL with scheme http, https, or socks5 and a host',
      ],
    ])('refuses %s, naming the field, and stores nothing of it', async (_what, cluster, message) => {
      await applyStatusOk('probe', statusConfig('strict', { accessProviders: [provider('before')] }, 'v1alpha2'));
      const result = await probe({ accessProviders: [provider('bad', cluster)] });
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('status.accessProviders[0].cluster.');
      expect(result.stderr).toContain(message);
      expect(result.stored).toEqual(['before']);
    });

    it('accepts 64 access providers and refuses 65', async () => {
      const many = (count: number): Json[] => Array.from({ length: count }, (_, index) => provider(`p${index}`));
      const ok = await probe({ accessProviders: many(64) });
      expect(ok.stderr).toBe('');
      expect(ok.stored).toHaveLength(64);
      const tooMany = await probe({ accessProviders: many(65) });
      expect(tooMany.code).not.toBe(0);
      expect(tooMany.stderr).toContain('status.accessProviders: Too many: 65: must have at most 64 items');
      expect(tooMany.stored).toHaveLength(64);
    });

    it('refuses two access providers or two extensions with one name (keyed lists), through apply and through a patch', async () => {
      await applyStatusOk('probe', statusConfig('strict', { accessProviders: [provider('before')] }, 'v1alpha2'));
      const twice = { accessProviders: [provider('twice'), provider('twice')] };
      const applied = await probe(twice);
      expect(applied.code).not.toBe(0);
      expect(applied.stderr).toContain('.status.accessProviders: duplicate entries for key [name="twice"]');
      const patched = await admin([
        'patch',
        'clusterprofiles.v1alpha2.multicluster.x-k8s.io',
        'strict',
        '-n',
        NAMESPACE,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: twice }),
      ]);
      expect(patched.code).not.toBe(0);
      expect(patched.stderr).toMatch(/status\.accessProviders\[1\]: Duplicate value: .*"name":"twice"/);

      const extension = { name: 'client.authentication.k8s.io/exec', extension: {} };
      const extensions = await probe({ accessProviders: [provider('ext', { extensions: [extension, extension] })] });
      expect(extensions.code).not.toBe(0);
      expect(extensions.stderr).toContain('duplicate entries for key [name="client.authentication.k8s.io/exec"]');
      expect(extensions.stored).toEqual(['before']);
    });

    it('refuses a clusterManager.name that is not a label value, and a change of clusterManager', async () => {
      const bad = await admin(
        ['create', '-f', '-'],
        JSON.stringify({
          apiVersion: 'multicluster.x-k8s.io/v1alpha2',
          kind: 'ClusterProfile',
          metadata: { name: 'bad-manager', namespace: NAMESPACE },
          spec: { clusterManager: { name: 'not a label/value' } },
        }),
      );
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain(
        'spec.clusterManager.name: Invalid value: "string": must be a valid Kubernetes label value',
      );
      const moved = await admin([
        'patch',
        'clusterprofiles.v1alpha2.multicluster.x-k8s.io',
        'strict',
        '-n',
        NAMESPACE,
        '--type=merge',
        '-p',
        '{"spec":{"clusterManager":{"name":"other"}}}',
      ]);
      expect(moved.code).not.toBe(0);
      expect(moved.stderr).toContain('ClusterManager is immutable');
    });

    it('v1alpha1 has none of these rules, as upstream v0.1.0: the same server is accepted there', async () => {
      await createProfile('lenient');
      const result = await applyStatus(
        'probe',
        statusConfig('lenient', { accessProviders: [provider('x', { server: 'api.example.test:6443' })] }),
      );
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
    });
  });
});
