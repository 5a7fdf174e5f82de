/**
 * The declarative tenant-cert flow without a cluster: the CRDs are what the schemas give; the list+watch loop resumes
 * and relists as an informer does (hand-made API answers, streamed as the API server streams a watch); the reconciler
 * over an in-process issuer and a small in-memory API store (Liqo-shaped specs, idempotency after a crash between the
 * Identity and the status, a generation answered once). The same flow on a real API server: test/e2e/tenant-flow.test.ts.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { parse } from 'yaml';
// @ts-expect-error -- a plain ESM build script without type declarations
import { generateTenantCrds } from '../../scripts/generate-tenant-crds.mjs';
import type { KubeRequest, KubeResponse, SendKubeRequest } from '../../src/kube/types.js';
import { listAndWatch, type WatchEventType } from '../../src/kube/watch.js';
import { REUSED_GRACE_MS, reconcile, type TenantControllerOptions } from '../../src/issuer/tenant-controller.js';
import { applyTenant } from '../../src/providers/tenant-cert/consumer/cluster-flow.js';
import { encodeBase64, publicKeyPem, signBytes } from '../../src/wire/tenant-cert/keys.js';
import { buildCsr } from '../../src/wire/tenant-cert/csr.js';
import { buildTenant } from '../../src/wire/tenant-cert/documents.js';
import {
  TENANT_GENERATION_ANNOTATION,
  TENANT_UID_ANNOTATION,
  type TenantResource,
} from '../../src/wire/tenant-cert/resources.js';
import { issuerFixture, type IssuerFixture } from '../helpers/issuer-fixtures.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('the Tenant and Identity CRDs (deploy/crds/)', () => {
  test('are exactly what scripts/generate-tenant-crds.mjs makes of the schemas (run `npm run schemas:crd`)', () => {
    for (const { file, text } of generateTenantCrds() as Array<{ file: string; text: string }>) {
      expect(readFileSync(`${root}${file}`, 'utf8'), `${file} is out of date: run npm run schemas:crd`).toBe(text);
    }
  });

  test('namespaced, one stored version with the status subresource, in our group', () => {
    for (const [file, kind] of [
      ['tenants', 'Tenant'],
      ['identities', 'Identity'],
    ] as const) {
      const crd = parse(readFileSync(`${root}deploy/crds/credentials.clusterprofile.io_${file}.yaml`, 'utf8'));
      expect(crd.metadata.name).toBe(`${file}.credentials.clusterprofile.io`);
      expect(crd.spec).toMatchObject({
        group: 'credentials.clusterprofile.io',
        scope: 'Namespaced',
        names: { kind, plural: file },
      });
      expect(crd.spec.versions).toHaveLength(1);
      expect(crd.spec.versions[0]).toMatchObject({
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
      });
    }
  });

  test('take no name kubectl resolves for ClusterProfiles: a category `clusterprofile` made `kubectl get|patch clusterprofile X` mean Tenants and Identities', () => {
    const clusterProfileNames = ['clusterprofile', 'clusterprofiles', 'cp', 'ClusterProfile'];
    for (const file of ['tenants', 'identities']) {
      const { names } = parse(
        readFileSync(`${root}deploy/crds/credentials.clusterprofile.io_${file}.yaml`, 'utf8'),
      ).spec;
      const taken = [names.plural, names.singular, ...(names.shortNames ?? []), ...(names.categories ?? [])];
      expect(
        taken.filter((name: string) => clusterProfileNames.includes(name)),
        file,
      ).toEqual([]);
    }
  });
});

/** A hand-made API server for one collection: answers from a script, streams watch events through onChunk. */
function scriptedServer(
  script: Array<(request: KubeRequest) => KubeResponse | { events: unknown[]; split?: boolean }>,
): { send: SendKubeRequest; paths: string[] } {
  const paths: string[] = [];
  let step = 0;
  const send: SendKubeRequest = async (request) => {
    paths.push(request.path);
    const answer = script[step++]?.(request);
    if (answer === undefined) return new Promise<KubeResponse>(() => undefined); // nothing more: a watch that never ends
    if ('events' in answer) {
      const text = answer.events.map((event) => `${JSON.stringify(event)}\n`).join('');
      // As a network delivers it: in chunks that do not respect line boundaries.
      for (let at = 0; at < text.length; at += 7) request.onChunk?.(Buffer.from(text.slice(at, at + 7)));
      return { status: 200, body: '' };
    }
    return answer;
  };
  return { send, paths };
}

const object = (name: string, resourceVersion: string) => ({ metadata: { name, resourceVersion } });

describe('listAndWatch', () => {
  test("lists, watches from the list's resourceVersion, resumes at the last one seen, relists on 410 Gone", async () => {
    const stop = new AbortController();
    const seen: Array<[WatchEventType, string]> = [];
    const server = scriptedServer([
      () => ({ status: 200, body: { metadata: { resourceVersion: '10' }, items: [object('a', '9')] } }),
      () => ({
        events: [
          { type: 'MODIFIED', object: object('a', '11') },
          { type: 'BOOKMARK', object: { metadata: { resourceVersion: '15' } } },
        ],
      }),
      () => ({
        events: [
          { type: 'DELETED', object: object('a', '16') },
          { type: 'ERROR', object: { kind: 'Status', code: 410, message: 'too old resource version' } },
        ],
      }),
      () => ({ status: 200, body: { metadata: { resourceVersion: '20' }, items: [object('b', '19')] } }),
      () => ({ events: [{ type: 'ADDED', object: object('c', '21') }] }),
    ]);
    const loop = listAndWatch<{ metadata: { name: string; resourceVersion: string } }>({
      send: server.send,
      path: '/apis/g/v1/namespaces/n/things',
      signal: stop.signal,
      timeoutSeconds: 5,
      onEvent: async (type, item) => {
        seen.push([type, item.metadata.name]);
        if (item.metadata.name === 'c') stop.abort();
      },
    });
    await loop;
    expect(seen).toEqual([
      ['ADDED', 'a'],
      ['MODIFIED', 'a'],
      ['DELETED', 'a'],
      ['ADDED', 'b'],
      ['ADDED', 'c'],
    ]);
    expect(server.paths).toEqual([
      '/apis/g/v1/namespaces/n/things',
      '/apis/g/v1/namespaces/n/things?watch=1&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=10',
      '/apis/g/v1/namespaces/n/things?watch=1&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=15',
      '/apis/g/v1/namespaces/n/things',
      '/apis/g/v1/namespaces/n/things?watch=1&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=20',
    ]);
  });

  test('a failed list is retried after the pause, never ends the loop', async () => {
    const stop = new AbortController();
    const lines: string[] = [];
    const server = scriptedServer([
      () => ({ status: 403, body: { kind: 'Status', message: 'tenants is forbidden' } }),
      () => ({ status: 200, body: { metadata: { resourceVersion: '1' }, items: [object('a', '1')] } }),
    ]);
    await listAndWatch({
      send: server.send,
      path: '/x',
      signal: stop.signal,
      retryDelayMs: 1,
      log: (line) => lines.push(line),
      onEvent: async () => stop.abort(),
    });
    expect(lines).toEqual(['list /x failed: listing /x answered 403: tenants is forbidden; again in 1 ms']);
  });
});

/** The few API calls the reconciler makes, kept in memory (objects by path; status patches merged). */
function memoryApi(): { send: SendKubeRequest; objects: Map<string, any>; calls: string[] } {
  const objects = new Map<string, any>();
  const calls: string[] = [];
  let uid = 0;
  const send: SendKubeRequest = async ({ method, path, body }) => {
    calls.push(`${method} ${path}`);
    const patchStatus = path.endsWith('/status');
    const target = patchStatus ? path.slice(0, -'/status'.length) : path;
    switch (method) {
      case 'GET':
        return objects.has(target)
          ? { status: 200, body: structuredClone(objects.get(target)) }
          : { status: 404, body: { kind: 'Status', message: 'not found', details: { name: target.split('/').pop() } } };
      case 'POST': {
        const item = structuredClone(body) as any;
        const at = `${path}/${item.metadata.name}`;
        if (objects.has(at)) return { status: 409, body: { kind: 'Status', message: 'already exists' } };
        item.metadata.uid = `uid-${++uid}`;
        item.metadata.generation = 1;
        item.metadata.resourceVersion = '1';
        delete item.status;
        objects.set(at, item);
        return { status: 201, body: structuredClone(item) };
      }
      case 'PUT': {
        // As with the status subresource: a PUT keeps the status, a new spec is a new generation.
        const current = objects.get(path);
        const item = structuredClone(body) as any;
        const changed = JSON.stringify(item.spec) !== JSON.stringify(current?.spec);
        item.metadata = {
          ...item.metadata,
          uid: current?.metadata.uid,
          generation: (current?.metadata.generation ?? 0) + (changed ? 1 : 0),
          resourceVersion: String(Number(current?.metadata.resourceVersion ?? '0') + 1),
        };
        if (current?.status !== undefined && path.includes('/tenants/')) item.status = current.status;
        objects.set(path, item);
        return { status: 200, body: structuredClone(item) };
      }
      case 'PATCH': {
        const current = objects.get(target);
        if (current === undefined) return { status: 404, body: {} };
        const precondition = (body as any).metadata?.resourceVersion;
        if (precondition !== undefined && precondition !== current.metadata.resourceVersion)
          return { status: 409, body: { kind: 'Status', message: 'the object has been modified' } };
        current.metadata.resourceVersion = String(Number(current.metadata.resourceVersion ?? '0') + 1);
        const status = { ...current.status, ...(body as any).status };
        for (const [key, value] of Object.entries(status)) if (value === null) delete status[key];
        current.status = status;
        return { status: 200, body: current };
      }
      default:
        return { status: 405, body: {} };
    }
  };
  return { send, objects, calls };
}

const TENANTS = '/apis/credentials.clusterprofile.io/v1alpha1/namespaces/ns/tenants';
const IDENTITIES = '/apis/credentials.clusterprofile.io/v1alpha1/namespaces/ns/identities';

describe('the reconciler (an in-process issuer, an in-memory API)', () => {
  let f: IssuerFixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  async function setup(liqoCompat: boolean) {
    f = await issuerFixture({ liqoCompat });
    const api = memoryApi();
    const options: TenantControllerOptions = {
      issuer: f.issuer,
      namespace: 'ns',
      send: api.send,
      watchSend: api.send,
      now: f.clock.now,
      apiServer: 'https://p1.example:6443',
    };
    const store = (tenant: TenantResource) => api.objects.set(`${TENANTS}/${tenant.metadata.name}`, tenant);
    const stored = (name: string): TenantResource => api.objects.get(`${TENANTS}/${name}`);
    return { f, api, options, store, stored };
  }

  const resource = (name: string, generation: number, spec: TenantResource['spec']): TenantResource => ({
    apiVersion: 'credentials.clusterprofile.io/v1alpha1',
    kind: 'Tenant',
    metadata: { name, uid: `tenant-${name}`, generation, resourceVersion: '1' },
    spec,
  });

  async function liqoSpec(fixture: IssuerFixture, id: string): Promise<TenantResource['spec']> {
    const key = await fixture.consumer(id);
    const nonce = await fixture.nonce(id);
    const csr = await buildCsr(key, { commonName: id, organizations: [] });
    return {
      clusterID: id,
      publicKey: encodeBase64(publicKeyPem(key)),
      csr: encodeBase64(csr.pem),
      signature: encodeBase64(signBytes(key, Buffer.from(nonce))),
    };
  }

  test('a Liqo-shaped spec (no nonce, no provider) is refused without --liqo-compat, coded, and nothing but the status is written', async () => {
    const { f, api, options, store, stored } = await setup(false);
    const tenant = resource('c1', 1, await liqoSpec(f, 'c1'));
    store(tenant);
    await reconcile(options, tenant);
    expect(stored('c1').status?.conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'False',
      reason: 'ERR_TENANT_LIQO_COMPAT_DISABLED',
    });
    expect(stored('c1').status?.observedGeneration).toBe(1);
    expect(api.calls.filter((call) => !call.startsWith('GET'))).toEqual([`PATCH ${TENANTS}/c1/status`]);
  });

  test('with --liqo-compat the Liqo spec is answered: an Identity owned by the Tenant, a Secret owned by the Identity, through the proxy the Tenant names', async () => {
    const { f, api, options, store, stored } = await setup(true);
    const tenant = resource('c1', 1, { ...(await liqoSpec(f, 'c1')), proxyURL: 'http://proxy.c1.example:3128' });
    store(tenant);
    await reconcile(options, tenant);
    expect(stored('c1').status).toMatchObject({
      observedGeneration: 1,
      identityRef: { name: 'c1' },
      kubeconfigSecretRef: { name: 'kubeconfig-c1' },
    });
    const identity = api.objects.get(`${IDENTITIES}/c1`);
    expect(identity.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Tenant', uid: 'tenant-c1', controller: true }),
    ]);
    expect(identity.spec).toMatchObject({
      clusterID: 'p1',
      consumerClusterID: 'c1',
      authParams: { apiServer: 'https://p1.example:6443', proxyURL: 'http://proxy.c1.example:3128' },
    });
    const secret = api.objects.get('/api/v1/namespaces/ns/secrets/kubeconfig-c1');
    expect(secret.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Identity', uid: identity.metadata.uid }),
    ]);
    const kubeconfig = parse(Buffer.from(secret.data.kubeconfig, 'base64').toString('utf8'));
    expect(kubeconfig.clusters[0].cluster).toMatchObject({
      server: 'https://p1.example:6443',
      'proxy-url': 'http://proxy.c1.example:3128',
    });
    expect(kubeconfig.users[0].user['client-key-data']).toBeUndefined();
  });

  test('a generation is answered once: the same one again makes no call; after a crash between Identity and status only the status is written', async () => {
    const { f, api, options, store, stored } = await setup(false);
    const key = await f.consumer('c1');
    const document = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: await f.nonce('c1'),
    });
    const tenant = resource('c1', 2, document.spec);
    store(tenant);
    await reconcile(options, tenant);
    const identity = api.objects.get(`${IDENTITIES}/c1`);
    expect(identity.metadata.annotations).toEqual({
      [TENANT_UID_ANNOTATION]: 'tenant-c1',
      [TENANT_GENERATION_ANNOTATION]: '2',
    });

    api.calls.length = 0;
    await reconcile(options, stored('c1'));
    expect(api.calls).toEqual([]);

    // The status lost (as if the issuer stopped before writing it): the Identity says generation 2 was answered.
    const lost = { ...stored('c1') };
    delete lost.status;
    await reconcile(options, lost);
    expect(api.calls.filter((call) => !call.startsWith('GET'))).toEqual([`PATCH ${TENANTS}/c1/status`]);
    expect(stored('c1').status?.conditions?.[0]).toMatchObject({ status: 'True', reason: 'Issued' });
  });

  test('tenant apply --to-cluster against the reconciler: issued; before renewAfter nothing is asked; after it, a new certificate in the same Identity', async () => {
    const { f, api, options, stored } = await setup(false);
    const key = await f.consumer('c1');
    // The issuer answers every Tenant write, as its watch would.
    const send: SendKubeRequest = async (request, sendOptions) => {
      const response = await api.send(request, sendOptions);
      if (
        (request.method === 'POST' || request.method === 'PUT') &&
        request.path.startsWith(TENANTS) &&
        response.status < 300
      ) {
        void reconcile(options, structuredClone(stored((response.body as TenantResource).metadata.name)));
      }
      return response;
    };
    const flow = {
      send,
      namespace: 'ns',
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      timeoutMs: 5000,
      now: f.clock.now,
      pollMs: 1,
    };
    const first = await applyTenant(flow);
    expect(first).toMatchObject({ tenant: 'c1', identity: 'c1', secret: 'kubeconfig-c1', renewed: true });
    const certificate = () =>
      Buffer.from(api.objects.get(`${IDENTITIES}/c1`).spec.authParams.signedCRT, 'base64').toString('utf8');
    const firstCertificate = certificate();
    const identityUid = api.objects.get(`${IDENTITIES}/c1`).metadata.uid;

    const writes = api.calls.length;
    expect(await applyTenant(flow)).toMatchObject({ renewed: false, renewAfter: first.renewAfter });
    expect(api.calls.slice(writes).every((call) => call.startsWith('GET'))).toBe(true);

    f.clock.advance(Date.parse(first.renewAfter!) - f.clock.now().getTime() + 1000);
    expect(await applyTenant(flow)).toMatchObject({ identity: 'c1', renewed: true });
    expect(certificate()).not.toBe(firstCertificate);
    expect(api.objects.get(`${IDENTITIES}/c1`).metadata.uid).toBe(identityUid);
    expect(Date.parse(stored('c1').status!.renewAfter!)).toBeGreaterThan(Date.parse(first.renewAfter!));
  });

  test('a refusal judged on an older version is not written over a newer answer (another replica issued meanwhile)', async () => {
    const { f, api, options, store, stored } = await setup(false);
    const key = await f.consumer('c1');
    const document = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: await f.nonce('c1'),
    });
    const tenant = resource('c1', 1, document.spec);
    store(structuredClone(tenant));
    await reconcile(options, structuredClone(tenant)); // "replica A": issues, writes Issued (the stored version moves on)
    expect(stored('c1').metadata.resourceVersion).not.toBe(tenant.metadata.resourceVersion);
    api.objects.delete(`${IDENTITIES}/c1`); // "replica B" has not seen A's Identity: it judges the old version
    await reconcile(options, structuredClone(tenant)); // the nonce is spent: ERR_TENANT_NONCE_REUSED, over the old resourceVersion
    expect(stored('c1').status?.conditions?.[0]).toMatchObject({ status: 'True', reason: 'Issued' });
  });

  test('a running controller writes a nonce-reused refusal only after the grace period, and not when another replica answered that generation', async () => {
    const { f, api, options, store, stored } = await setup(false);
    const key = await f.consumer('c1');
    const deferred: Array<{ check: () => Promise<void>; ms: number }> = [];
    const withLater: TenantControllerOptions = { ...options, later: (check, ms) => deferred.push({ check, ms }) };
    const document = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: await f.nonce('c1'),
    });
    const tenant = resource('c1', 1, document.spec);
    store(structuredClone(tenant));
    // Replica B sees the nonce already spent by replica A, which has not written its answer yet: B writes nothing now.
    await f.issuer.acceptTenant(document);
    const before = api.calls.length;
    await reconcile(withLater, structuredClone(tenant));
    expect(api.calls.slice(before).filter((call) => !call.startsWith('GET'))).toEqual([]);
    expect(deferred).toHaveLength(1);
    expect(deferred[0]!.ms).toBe(REUSED_GRACE_MS);
    // A's answer lands meanwhile: B's look after the grace period leaves it.
    const answered = stored('c1');
    api.objects.set(`${TENANTS}/c1`, {
      ...answered,
      metadata: { ...answered.metadata, resourceVersion: '7' },
      status: { observedGeneration: 1, conditions: [{ type: 'Ready', status: 'True', reason: 'Issued' }] },
    });
    await deferred[0]!.check();
    expect(stored('c1').status?.conditions?.[0]).toMatchObject({ status: 'True', reason: 'Issued' });

    // The same spent nonce under another name (a replay): nobody answers it, so the refusal is written after the grace.
    store(structuredClone({ ...tenant, metadata: { ...tenant.metadata, name: 'replayed', uid: 'tenant-replayed' } }));
    await reconcile(withLater, structuredClone(stored('replayed')));
    expect(stored('replayed').status).toBeUndefined();
    await deferred[1]!.check();
    expect(stored('replayed').status?.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'ERR_TENANT_NONCE_REUSED',
    });
    expect(stored('replayed').status?.observedGeneration).toBe(1);
  });
});
