/**
 * v1alpha2 profiles the CRD refuses, on the real API server: the CEL rules on `cluster.server` and `cluster.proxy-url`
 * and the cap of 64 access providers (upstream's kubebuilder markers of apis/v1alpha2, which schemas/crd carries; see
 * test/fixtures/upstream/README.md). Each case goes to kube-apiserver as a status write of a v1alpha2 profile
 * (server-side dry run) and to our validator (schemas/clusterprofile.v1alpha2.schema.json): both must accept it, or
 * both refuse it, with the same message; and the user who wrote it reads the API server's refusal with the field.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { validateDocument } from '../../src/schemas/index.js';
import { e2eContext, kubectl } from '../helpers/controlplane-e2e.js';

const crdFile = fileURLToPath(new URL('../../schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml', import.meta.url));
const NS = 'v1alpha2-cel-e2e';
const NAME = 'member-cel';
const RESOURCE = 'clusterprofiles.v1alpha2.multicluster.x-k8s.io';
let caData = '';

async function admin(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const { controlPlane } = e2eContext();
  return kubectl(controlPlane.adminKubeconfig, args, input === undefined ? {} : { input });
}

function statusWith(cluster: Record<string, unknown>, count = 1): Record<string, unknown> {
  return {
    accessProviders: Array.from({ length: count }, (_, index) => ({
      name: `provider-${index}`,
      cluster: { 'certificate-authority-data': caData, ...cluster },
    })),
  };
}

/** What kube-apiserver says of the status write, and what our validator says of the profile. */
async function judge(status: Record<string, unknown>): Promise<{ server: string[]; ours: string[]; stderr: string }> {
  const patch = await admin([
    'patch',
    RESOURCE,
    NAME,
    '-n',
    NS,
    '--subresource=status',
    '--type=merge',
    '--dry-run=server',
    '-p',
    JSON.stringify({ status }),
  ]);
  const profile = {
    apiVersion: 'multicluster.x-k8s.io/v1alpha2',
    kind: 'ClusterProfile',
    metadata: { name: NAME, namespace: NS },
    spec: { displayName: NAME, clusterManager: { name: 'e2e' } },
    status,
  };
  const ours = validateDocument('clusterprofile.v1alpha2', profile).map((issue) => `${issue.path}: ${issue.message}`);
  return { server: patch.code === 0 ? [] : [patch.stderr], ours, stderr: patch.stderr };
}

beforeAll(async () => {
  const { controlPlane } = e2eContext();
  caData = Buffer.from(await readFile(controlPlane.caFile, 'utf8')).toString('base64');
  for (const args of [
    ['apply', '-f', crdFile],
    ['wait', '--for=condition=Established', '--timeout=60s', 'crd/clusterprofiles.multicluster.x-k8s.io'],
    ['create', 'namespace', NS],
  ]) {
    const result = await admin(args);
    expect(result.code, result.stderr).toBe(0);
  }
  const created = await admin(
    ['create', '-f', '-'],
    JSON.stringify({
      apiVersion: 'multicluster.x-k8s.io/v1alpha2',
      kind: 'ClusterProfile',
      metadata: { name: NAME, namespace: NS },
      spec: { displayName: NAME, clusterManager: { name: 'e2e' } },
    }),
  );
  expect(created.code, created.stderr).toBe(0);
}, 120_000);

describe('v1alpha2 CEL rules and limits: kube-apiserver and our validator agree', () => {
  const SERVER = 'https://api.example.com:6443';
  it.each([
    ['server', 'https://api.example.com', true],
    ['server', 'https://10.0.0.3:6443', true],
    ['server', 'https://[2001:db8::1]:6443/prefix', true],
    ['server', 'unix://socket-host', true],
    ['server', 'api.example.com:6443', false],
    ['server', 'https://', false],
    ['server', 'https:///path', false],
    ['server', '/relative', false],
    ['proxy-url', 'http://proxy:3128', true],
    ['proxy-url', 'HTTPS://proxy.example.com', true],
    ['proxy-url', 'socks5://127.0.0.1:1080', true],
    ['proxy-url', '', true],
    ['proxy-url', 'ftp://proxy', false],
    ['proxy-url', 'socks4://proxy:1080', false],
    ['proxy-url', 'proxy:3128', false],
    ['proxy-url', 'http://', false],
  ] as const)('%s %j: accepted %s by both', async (field, value, accepted) => {
    const cluster = field === 'server' ? { server: value } : { server: SERVER, 'proxy-url': value };
    const { server, ours, stderr } = await judge(statusWith(cluster));
    expect(server.length === 0, stderr).toBe(accepted);
    expect(ours.length === 0, ours.join('\n')).toBe(accepted);
    if (!accepted) {
      const message =
        field === 'server'
          ? 'server must be a valid absolute URL with a host'
          : 'proxy-url must be a valid URL with scheme http, https, or socks5 and a host';
      // What the user who wrote it reads: the field and the rule's message, from the API server and from us.
      expect(stderr).toContain(`status.accessProviders[0].cluster.${field}`);
      expect(stderr).toContain(message);
      expect(ours).toEqual([
        `$.status.accessProviders[0].cluster${field === 'server' ? '.server' : "['proxy-url']"}: ${message}`,
      ]);
    }
  });

  it.each([
    [64, true],
    [65, false],
  ])('%i access providers: accepted %s by both', async (count, accepted) => {
    const { server, ours, stderr } = await judge(statusWith({ server: SERVER }, count));
    expect(server.length === 0, stderr).toBe(accepted);
    expect(ours.length === 0, ours.join('\n')).toBe(accepted);
    if (!accepted) {
      expect(stderr).toMatch(/status\.accessProviders: Too many: 65: must have at most 64 items/);
      expect(ours).toEqual([expect.stringMatching(/^\$\.status\.accessProviders: must have at most 64 items/)]);
    }
  });
});
