/**
 * The one ClusterProfile reader against a real HTTPS "hub" that serves one version of the CRD or the other, the way
 * kube-apiserver answers: a 404 Status naming the object when it does not exist, a 404 naming nothing for a version
 * that is not served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getClusterProfile, listClusterProfiles } from '../../src/kube/cluster-profile.js';
import { createKubeTransport } from '../../src/kube/transport.js';
import { buildProfile } from '../helpers/library-fixtures.js';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.js';
import { rejection } from '../helpers/errors.js';

const TOKEN = 'hub-token';
const GROUP = '/apis/multicluster.x-k8s.io/';

function v1alpha2(name: string) {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha2',
    kind: 'ClusterProfile',
    metadata: { name, namespace: 'fleet' },
    spec: { clusterManager: { name: 'demo' } },
    status: { accessProviders: [{ name: 'p', cluster: { server: 'https://spoke.example' } }] },
  };
}

function v1alpha1(name: string) {
  const profile = buildProfile();
  profile.metadata = { name, namespace: 'fleet' };
  return profile;
}

/** A hub serving `served` (or no version at all), with these profiles in namespace fleet. */
async function startHub(
  ca: TestCa,
  served: 'v1alpha1' | 'v1alpha2' | undefined,
  profiles: Record<string, unknown>,
): Promise<TestHttpsServer> {
  return startHttpsServer({
    ca,
    handler(request, _req, res) {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const failure = (code: number, reason: string, message: string, details: object = {}) =>
        send(code, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message,
          reason,
          details,
          code,
        });
      if (request.bearer !== TOKEN)
        return failure(
          403,
          'Forbidden',
          'clusterprofiles.multicluster.x-k8s.io is forbidden: User "x" cannot get resource "clusterprofiles"',
        );
      const match = /^\/apis\/multicluster\.x-k8s\.io\/([^/]+)\/namespaces\/fleet\/clusterprofiles(?:\/([^/]+))?$/.exec(
        request.url,
      );
      if (match === null || match[1] !== served)
        return failure(404, 'NotFound', 'the server could not find the requested resource');
      const name = match[2];
      if (name === undefined) {
        return send(200, {
          apiVersion: `multicluster.x-k8s.io/${served}`,
          kind: 'ClusterProfileList',
          metadata: {},
          items: Object.values(profiles),
        });
      }
      const profile = profiles[name];
      if (profile === undefined) {
        return failure(404, 'NotFound', `clusterprofiles.multicluster.x-k8s.io "${name}" not found`, {
          name,
          group: 'multicluster.x-k8s.io',
          kind: 'clusterprofiles',
        });
      }
      return send(200, profile);
    },
  });
}

let ca: TestCa;
const servers: TestHttpsServer[] = [];
const transports: { close(): Promise<void> }[] = [];
beforeAll(async () => {
  ca = await createTestCa();
});
afterAll(async () => {
  await Promise.all(transports.map((transport) => transport.close()));
  await Promise.all(servers.map((server) => server.close()));
});

async function hubOf(served: 'v1alpha1' | 'v1alpha2' | undefined, profiles: Record<string, unknown>, token = TOKEN) {
  const server = await startHub(ca, served, profiles);
  servers.push(server);
  const transport = createKubeTransport({ server: server.url, caPem: ca.cert }, { kind: 'token', token });
  transports.push(transport);
  return {
    server,
    hub: { send: transport.send, server: server.url },
    requests: () => server.requests.map((r) => r.url),
  };
}

describe('getClusterProfile', () => {
  it('a v1alpha1 hub: one request', async () => {
    const { hub, requests } = await hubOf('v1alpha1', { 'spoke-1': v1alpha1('spoke-1') });
    expect(await getClusterProfile(hub, 'fleet', 'spoke-1')).toEqual(v1alpha1('spoke-1'));
    expect(requests()).toEqual([`${GROUP}v1alpha1/namespaces/fleet/clusterprofiles/spoke-1`]);
  });

  it('a hub that serves only v1alpha2: v1alpha1 is not served (404 naming nothing), so v1alpha2 is asked', async () => {
    const { hub, requests } = await hubOf('v1alpha2', { 'spoke-2': v1alpha2('spoke-2') });
    expect(await getClusterProfile(hub, 'fleet', 'spoke-2')).toEqual(v1alpha2('spoke-2'));
    expect(requests()).toEqual([
      `${GROUP}v1alpha1/namespaces/fleet/clusterprofiles/spoke-2`,
      `${GROUP}v1alpha2/namespaces/fleet/clusterprofiles/spoke-2`,
    ]);
  });

  it('a profile that does not exist: ERR_PROFILE_NOT_FOUND at once, the URL as path', async () => {
    const { server, hub, requests } = await hubOf('v1alpha1', {});
    const error = await rejection(getClusterProfile(hub, 'fleet', 'nope'));
    expect(error.code).toBe('ERR_PROFILE_NOT_FOUND');
    expect(error.message).toBe(
      'ClusterProfile fleet/nope not found on the hub: clusterprofiles.multicluster.x-k8s.io "nope" not found',
    );
    expect(error.path).toBe(`${server.url}${GROUP}v1alpha1/namespaces/fleet/clusterprofiles/nope`);
    expect(requests()).toHaveLength(1);
  });

  it('a hub without the CRD: ERR_PROFILE_NOT_FOUND after both versions, with a hint about the CRD', async () => {
    const { hub, requests } = await hubOf(undefined, {});
    const error = await rejection(getClusterProfile(hub, 'fleet', 'spoke-1'));
    expect(error.code).toBe('ERR_PROFILE_NOT_FOUND');
    expect(error.hint).toContain('is the CRD installed?');
    expect(requests()).toHaveLength(2);
  });

  it('a refusal is ERR_HUB_REQUEST with the status and the Status message; a served profile that breaks its schema is ERR_PROFILE_INVALID', async () => {
    const refused = await hubOf('v1alpha1', { 'spoke-1': v1alpha1('spoke-1') }, 'wrong');
    const error = await rejection(getClusterProfile(refused.hub, 'fleet', 'spoke-1'));
    expect(error.code).toBe('ERR_HUB_REQUEST');
    expect(error.message).toMatch(
      /^cannot read ClusterProfile fleet\/spoke-1 from the hub \(HTTP 403\): clusterprofiles.multicluster.x-k8s.io is forbidden/,
    );

    const { hub } = await hubOf('v1alpha2', { bad: { ...v1alpha2('bad'), spec: {} } });
    const invalid = await rejection(getClusterProfile(hub, 'fleet', 'bad'));
    expect([invalid.code, invalid.path]).toEqual(['ERR_PROFILE_INVALID', '$.spec.clusterManager']);
  });
});

describe('listClusterProfiles', () => {
  it('lists from the version the hub serves; an item that breaks its schema is listed with its error, the others stay usable', async () => {
    const broken = { ...v1alpha2('broken'), spec: {} };
    const { hub, requests } = await hubOf('v1alpha2', { 'spoke-2': v1alpha2('spoke-2'), broken });
    const listed = await listClusterProfiles(hub, 'fleet');
    expect(listed.map((item) => [item.name, item.profile?.apiVersion ?? item.error?.code])).toEqual([
      ['spoke-2', 'multicluster.x-k8s.io/v1alpha2'],
      ['broken', 'ERR_PROFILE_INVALID'],
    ]);
    expect(requests()).toEqual([
      `${GROUP}v1alpha1/namespaces/fleet/clusterprofiles`,
      `${GROUP}v1alpha2/namespaces/fleet/clusterprofiles`,
    ]);
  });

  it('a refused list is ERR_HUB_REQUEST', async () => {
    const { hub } = await hubOf('v1alpha1', {}, 'wrong');
    const error = await rejection(listClusterProfiles(hub, 'fleet'));
    expect(error.code).toBe('ERR_HUB_REQUEST');
    expect(error.message).toMatch(/^cannot list ClusterProfiles in namespace fleet: /);
  });
});
