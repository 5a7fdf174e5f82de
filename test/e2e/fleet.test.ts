/**
 * ClusterProfileFleet on the real control plane: the CRD from schemas/crd, an inventory namespace of ClusterProfiles
 * whose status a "cluster manager" (kubectl as admin) writes, a hub identity that may only get/list/watch them, and
 * members whose credentials are token-request tokens obtained in-process (the providers file names the
 * clusterprofile-token-request binary; the fleet runs its provider through obtainCredential, sharing the binary's
 * cache directory). The "member clusters" are this same API server, each profile bound to its own ServiceAccount, so
 * a SelfSubjectReview through each member's client names that member's ServiceAccount.
 *
 * The hub is reached through a small HTTP relay (the hub kubeconfig points at it; it forwards to the API server with
 * the hub identity's certificate) that can cut open watches and answer the next watch with 410 Gone, as the API server
 * does for a compacted resourceVersion: the recoveries are observed on a real list and watch.
 */
import http from 'node:http';
import https from 'node:https';
import { mkdtemp, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuthenticationV1Api } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClusterProfileFleet,
  ClusterProfileKubeConfig,
  type AccessConfig,
  type FleetEvent,
  type FleetMember,
} from '../../src/library/index.js';
import {
  applyAsAdmin,
  e2eContext,
  exec,
  issueClientCert,
  kubectl,
  tempFile,
  tokenKubeconfig,
  whoami,
} from '../helpers/controlplane-e2e.js';
import { clusterProfileCrdFile, profileApiVersion } from '../helpers/e2e-crd.js';
import { clientCertKubeconfig as kubeconfigDocument } from '../helpers/controlplane.js';
import { fleetRbac } from '../helpers/fleet-rbac.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const crdFile = clusterProfileCrdFile;
const cli = path.join(repo, 'bin/clusterprofile.mjs');
const NS = 'fleet-e2e';
const SA_NS = 'fleet-e2e-members';
const HUB_USER = 'e2e-fleet-hub';
const MINTER = 'e2e-fleet-minter';

let caPem = '';
let hubKubeconfig = '';
let minterKubeconfig = '';
let cacheRoot = '';
let accessConfig: AccessConfig;
let relay: Relay;

async function admin(args: string[], input?: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const result = await kubectl(controlPlane.adminKubeconfig, args, input === undefined ? {} : { input });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** A ClusterProfile whose token-request config binds it to ServiceAccount `sa` (or a provider of another name). */
function profile(
  name: string,
  o: { sa?: string; provider?: string; healthy?: boolean } = {},
): { object: Record<string, unknown>; status: Record<string, unknown> } {
  const { controlPlane } = e2eContext();
  const status: Record<string, unknown> = {
    accessProviders: [
      {
        name: o.provider ?? 'token-request',
        cluster: {
          server: controlPlane.server,
          'certificate-authority-data': Buffer.from(caPem).toString('base64'),
          extensions: [
            {
              name: 'client.authentication.k8s.io/exec',
              extension: { namespace: SA_NS, serviceAccount: o.sa ?? name, expirationSeconds: 600 },
            },
          ],
        },
      },
    ],
    conditions: [
      {
        type: 'ControlPlaneHealthy',
        status: o.healthy === false ? 'False' : 'True',
        reason: 'Probe',
        message: 'e2e',
        lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      },
    ],
  };
  return {
    object: {
      apiVersion: profileApiVersion,
      kind: 'ClusterProfile',
      metadata: { name, namespace: NS },
      spec: { displayName: name, clusterManager: { name: 'e2e' } },
    },
    status,
  };
}

/** Creates a profile and writes its status (a subresource), as a cluster manager does; returns the last resourceVersion. */
async function createProfile(name: string, o: Parameters<typeof profile>[1] = {}): Promise<string> {
  const { object, status } = profile(name, o);
  await admin(['create', '-f', '-'], JSON.stringify(object));
  return patchStatus(name, status);
}

async function patchStatus(name: string, status: Record<string, unknown>): Promise<string> {
  const out = await admin([
    'patch',
    'clusterprofile',
    name,
    '-n',
    NS,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
    '-o',
    'json',
  ]);
  return (JSON.parse(out) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
}

async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 30_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until the fleet has seen the hub at `resourceVersion` or later (etcd revisions are numbers in practice). */
function seen(fleet: ClusterProfileFleet, resourceVersion: string): Promise<true> {
  return waitFor(`resourceVersion ${resourceVersion}`, () => {
    const current = fleet.status().hub.resourceVersion;
    return current !== undefined && BigInt(current) >= BigInt(resourceVersion);
  });
}

async function whoamiThrough(member: FleetMember | ClusterProfileKubeConfig | undefined): Promise<string | undefined> {
  const client = member instanceof ClusterProfileKubeConfig ? member : member!.client!;
  const review = await client.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return review.status?.userInfo?.username;
}

interface Relay {
  url: string;
  requests: { watch: number; list: number };
  /** Ends every open watch (as a hub restart does). */
  cutWatches(): void;
  /** The next watch is answered 410 Gone. */
  goneOnNextWatch(): void;
  close(): Promise<void>;
}

/** A plain-HTTP relay to the API server as `pair` (the hub identity); counts and breaks watches on demand. */
async function startRelay(pair: { cert: string; key: string }): Promise<Relay> {
  const { controlPlane } = e2eContext();
  const upstream = new URL(controlPlane.server);
  const open = new Set<http.ServerResponse>();
  const requests = { watch: 0, list: 0 };
  let gone = false;
  const server = http.createServer((req, res) => {
    const isWatch = /[?&]watch=(1|true)/.test(req.url ?? '');
    if (isWatch) requests.watch += 1;
    else requests.list += 1;
    if (isWatch && gone) {
      gone = false;
      res.writeHead(410, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          message: 'too old resource version',
          reason: 'Expired',
          code: 410,
        }),
      );
      return;
    }
    const forward = https.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: { accept: req.headers.accept ?? 'application/json' },
        ca: caPem,
        cert: pair.cert,
        key: pair.key,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        if (isWatch) {
          open.add(res);
          res.on('close', () => open.delete(res));
        }
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    cutWatches: () => {
      for (const res of open) res.destroy();
    },
    goneOnNextWatch: () => {
      gone = true;
    },
    close: () =>
      new Promise((resolve) => {
        for (const res of open) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The members whose credential keeps failing: their retries (with backoff) report credentialError at any time. */
const FAILING = new Set(['member-hangs', 'member-no-sa']);

/** Events after index `from`, less the retries of the failing members. */
function since(events: FleetEvent[], from: number): FleetEvent[] {
  return events.slice(from).filter((event) => !(event.type === 'credentialError' && FAILING.has(event.name)));
}

function recorder(fleet: ClusterProfileFleet): FleetEvent[] {
  const events: FleetEvent[] = [];
  for (const type of ['added', 'updated', 'removed', 'unhealthy', 'credentialError', 'invalid', 'hubError'] as const) {
    fleet.on(type, (event) => events.push(event));
  }
  return events;
}

beforeAll(async () => {
  const { controlPlane } = e2eContext();
  caPem = await readFile(controlPlane.caFile, 'utf8');
  await admin(['apply', '-f', crdFile]);
  await admin(['wait', '--for=condition=Established', '--timeout=60s', 'crd/clusterprofiles.multicluster.x-k8s.io']);
  await admin(['create', 'namespace', NS]);
  await admin(['create', 'namespace', SA_NS]);
  for (const sa of ['member-1', 'member-1b', 'member-2', 'member-3'])
    await admin(['create', 'serviceaccount', sa, '-n', SA_NS]);
  await applyAsAdmin(fleetRbac({ inventory: NS, accounts: SA_NS, hubUser: HUB_USER, minter: MINTER }));
  const hubPair = await issueClientCert(HUB_USER);
  relay = await startRelay(hubPair);
  hubKubeconfig = await tempFile(
    'hub.kubeconfig',
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'hub', cluster: { server: relay.url } }],
      users: [{ name: 'relay', user: {} }],
      contexts: [{ name: 'hub', context: { cluster: 'hub', user: 'relay' } }],
      'current-context': 'hub',
    }),
  );
  minterKubeconfig = await tempFile(
    'minter.kubeconfig',
    stringify(kubeconfigDocument(controlPlane.server, caPem, MINTER, await issueClientCert(MINTER))),
  );
  cacheRoot = await mkdtemp(path.join(controlPlane.workDir, 'fleet-cache-'));
  accessConfig = {
    providers: [
      {
        name: 'token-request',
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1',
          // The binary's name: the fleet runs its provider in-process (it need not be on PATH).
          command: 'clusterprofile-token-request',
          args: ['--bootstrap-kubeconfig', minterKubeconfig],
          provideClusterInfo: true,
          interactiveMode: 'Never',
        },
      },
      {
        // A plugin that never answers: killed at the fleet's deadline.
        name: 'hangs',
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: ['-e', 'setInterval(() => {}, 1000)'],
          provideClusterInfo: true,
          interactiveMode: 'Never',
        },
      },
      {
        // Our binary, but a flag it refuses: that member's state, nobody else's.
        name: 'bad-flags',
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: '/usr/local/bin/clusterprofile-token-request',
          args: ['--no-such-flag'],
          provideClusterInfo: true,
          interactiveMode: 'Never',
        },
      },
    ],
  };
  await createProfile('member-1');
  await createProfile('member-2');
  await createProfile('member-3');
  await createProfile('member-hangs', { provider: 'hangs' });
  // No such ServiceAccount: the TokenRequest fails (404) for this member only.
  await createProfile('member-no-sa', { sa: 'nobody' });
  await createProfile('member-unknown-provider', { provider: 'not-in-the-providers-file' });
  await createProfile('member-bad-flags', { provider: 'bad-flags' });
}, 120_000);

afterAll(async () => {
  await relay?.close();
  // Other files list ClusterProfiles across all namespaces (the harness runs no namespace controller to delete them).
  await admin(['delete', 'clusterprofiles', '--all', '-n', NS, '--wait=true']);
});

describe('ClusterProfileFleet on the real control plane', () => {
  let fleet: ClusterProfileFleet;
  let events: FleetEvent[];

  afterAll(async () => {
    await fleet?.close();
  });

  it('engages every member with a credential; a hanging plugin, a failing TokenRequest and bad profiles delay no one', async () => {
    fleet = new ClusterProfileFleet({
      namespace: NS,
      accessConfig,
      hub: { kubeconfig: hubKubeconfig },
      env: { ...process.env, KUBECACHEDIR: cacheRoot },
      fetchTimeoutMs: 5_000,
      disengageUnhealthy: true,
    });
    events = recorder(fleet);
    await fleet.start();
    await waitFor('three members engaged', () =>
      ['member-1', 'member-2', 'member-3'].every((name) => fleet.get(name)?.engaged === true),
    );
    // The others did not wait for the hanging plugin: it is still running (its deadline is 5 s).
    expect(fleet.get('member-hangs')?.state).toBe('pending');
    await fleet.settled();

    const byName = Object.fromEntries(fleet.status().clusters.map((row) => [row.name, row]));
    for (const name of ['member-1', 'member-2', 'member-3']) {
      expect(byName[name]).toMatchObject({
        state: 'ready',
        engaged: true,
        provider: 'token-request',
        mode: 'in-process',
        fetches: 1,
        rebuilds: 0,
      });
      expect(Date.parse(byName[name]!.credentialExpiresAt!)).toBeGreaterThan(Date.now() + 400_000);
    }
    expect(byName['member-hangs']).toMatchObject({
      state: 'failing',
      engaged: false,
      mode: 'exec',
      lastError: { code: 'ERR_EXEC_TIMEOUT' },
    });
    expect(byName['member-no-sa']).toMatchObject({ state: 'failing', mode: 'in-process' });
    expect(byName['member-no-sa']!.lastError!.code).toMatch(/^ERR_TOKEN_REQUEST_/);
    expect(byName['member-unknown-provider']).toMatchObject({
      state: 'invalid',
      lastError: { code: 'ERR_NO_MATCHING_PROVIDER' },
    });
    expect(byName['member-bad-flags']).toMatchObject({ state: 'invalid', lastError: { code: 'ERR_PLUGIN_USAGE' } });
    expect(byName['member-bad-flags']!.lastError!.message).toContain('--no-such-flag');
    expect(
      events
        .filter((e) => e.type === 'added')
        .map((e) => e.name)
        .sort(),
    ).toEqual(['member-1', 'member-2', 'member-3']);
    expect(
      events
        .filter((e) => e.type === 'invalid')
        .map((e) => e.name)
        .sort(),
    ).toEqual(['member-bad-flags', 'member-unknown-provider']);
    expect(events.some((e) => e.type === 'credentialError' && e.name === 'member-hangs')).toBe(true);

    // The in-process credential is the binary's: its entry is in the binary's cache directory.
    const entries = await readFile(path.join(cacheRoot, 'clusterprofile', 'token-request'), 'utf8').catch(
      (error: NodeJS.ErrnoException) => error.code,
    );
    expect(entries).toBe('EISDIR');

    const metrics = await fleet.metrics();
    expect(metrics).toContain('clusterprofile_fleet_clusters{state="ready"} 3');
    expect(metrics).toContain('clusterprofile_fleet_clusters{state="invalid"} 2');
    expect(metrics).toMatch(
      /clusterprofile_fleet_credential_fetches_total\{provider="token-request",mode="in-process"\} [4-9]/,
    );
    expect(metrics).toContain('clusterprofile_fleet_credential_fetch_timeouts_total{provider="hangs",mode="exec"} 1');
    expect(metrics).toMatch(
      /clusterprofile_fleet_credential_fetch_failures_total\{provider="hangs",mode="exec",code="ERR_EXEC_TIMEOUT"\} 1/,
    );
    expect(metrics).toMatch(/clusterprofile_fleet_credential_nearest_expiry_seconds \d+/);
    expect(metrics).toContain('clusterprofile_fleet_credential_fetch_duration_seconds_bucket');
  });

  it("reaches each member with a SelfSubjectReview through its client, as the member's own ServiceAccount", async () => {
    for (const name of ['member-1', 'member-2', 'member-3']) {
      expect(await whoamiThrough(fleet.get(name))).toBe(`system:serviceaccount:${SA_NS}:${name}`);
    }
    // Requests used the credential the fleet holds: no further fetch.
    expect(fleet.get('member-1')?.fetches).toBe(1);
  });

  it('credential(name) hands out the credential the member holds; an unknown or invalid member is a coded error', async () => {
    const credential = await fleet.credential('member-1');
    expect(credential.expiresAt).toBe(fleet.get('member-1')?.credentialExpiresAt);
    const kubeconfig = await tokenKubeconfig('member-1-credential', credential.token!);
    expect((await whoami(kubeconfig)).username).toBe(`system:serviceaccount:${SA_NS}:member-1`);
    // The credential held was handed out: no further fetch.
    expect(fleet.get('member-1')?.fetches).toBe(1);
    await expect(fleet.credential('no-such-member')).rejects.toMatchObject({
      code: 'ERR_FLEET_MEMBER_UNKNOWN',
      path: `${NS}/no-such-member`,
    });
    await expect(fleet.credential('member-unknown-provider')).rejects.toMatchObject({
      code: 'ERR_NO_MATCHING_PROVIDER',
    });
  });

  it("a status-only change (a condition's lastTransitionTime) rebuilds nothing; an access change rebuilds exactly once", async () => {
    const before = events.length;
    const client = fleet.get('member-2')!.client;
    const { status } = profile('member-2');
    (status['conditions'] as { lastTransitionTime: string }[])[0]!.lastTransitionTime = '2030-01-01T00:00:00Z';
    await seen(fleet, await patchStatus('member-2', status));
    expect(since(events, before)).toEqual([]);
    expect(fleet.get('member-2')!.client).toBe(client);
    expect(fleet.get('member-2')!.rebuilds).toBe(0);

    const changed = profile('member-1', { sa: 'member-1b' });
    await seen(fleet, await patchStatus('member-1', changed.status));
    const updates = since(events, before).filter((e) => e.type === 'updated');
    expect(updates.map((e) => e.name)).toEqual(['member-1']);
    expect(since(events, before).filter((e) => e.type !== 'updated')).toEqual([]);
    expect(fleet.get('member-1')!.rebuilds).toBe(1);
    expect(await whoamiThrough(fleet.get('member-1'))).toBe(`system:serviceaccount:${SA_NS}:member-1b`);
    // The same access again (written twice): still one rebuild.
    await seen(fleet, await patchStatus('member-1', changed.status));
    expect(fleet.get('member-1')!.rebuilds).toBe(1);
  });

  it('ControlPlaneHealthy turning False is reported and, with disengageUnhealthy, disengages; True engages again', async () => {
    const before = events.length;
    await seen(fleet, await patchStatus('member-2', profile('member-2', { healthy: false }).status));
    expect(since(events, before).map((e) => `${e.type}:${'name' in e ? e.name : ''}`)).toEqual([
      'unhealthy:member-2',
      'removed:member-2',
    ]);
    expect(fleet.get('member-2')).toMatchObject({ state: 'unhealthy', engaged: false, healthy: false });
    await seen(fleet, await patchStatus('member-2', profile('member-2').status));
    expect(since(events, before).map((e) => `${e.type}:${'name' in e ? e.name : ''}`)).toEqual([
      'unhealthy:member-2',
      'removed:member-2',
      'added:member-2',
    ]);
    // Health is not access: the client was kept throughout.
    expect(fleet.get('member-2')!.rebuilds).toBe(0);
  });

  it('a cut watch resumes from its resourceVersion; a 410 Gone lists again without duplicate or rebuilt clients', async () => {
    const clients = new Map(fleet.list().map((member) => [member.name, member.client]));
    const before = events.length;
    const watches = relay.requests.watch;
    relay.cutWatches();
    await waitFor('a new watch', () => relay.requests.watch > watches);
    expect(fleet.status().hub.relists).toBe(0);

    relay.goneOnNextWatch();
    relay.cutWatches();
    await waitFor('a relist', () => fleet.status().hub.relists === 1);
    await waitFor('a watch after the relist', () => relay.requests.watch >= watches + 3);
    // Changes made while the watch was down arrive through the relist or the new watch.
    const rv = await createProfile('member-4', { sa: 'member-3' });
    await seen(fleet, rv);
    await waitFor('member-4 engaged', () => fleet.get('member-4')?.engaged === true);
    for (const [name, client] of clients) expect(fleet.get(name)?.client).toBe(client);
    // A profile is created before its status is written: until then it lists no access provider.
    expect(since(events, before).map((e) => `${e.type}:${'name' in e ? e.name : ''}`)).toEqual([
      'invalid:member-4',
      'added:member-4',
    ]);
    expect(
      fleet
        .list()
        .filter((member) => member.engaged)
        .map((member) => member.name),
    ).toEqual(['member-1', 'member-2', 'member-3', 'member-4']);
    // member-3 and member-4 reach the same ServiceAccount: one plugin input, one credential.
    expect(fleet.status().credentials.slots).toBe(
      fleet.list().filter((member) => member.mode !== undefined).length - 1,
    );
  });

  it('a deleted profile closes its client and forgets its credential', async () => {
    const client = fleet.get('member-2')!.client!;
    const slots = fleet.status().credentials.slots;
    const before = events.length;
    await admin(['delete', 'clusterprofile', 'member-2', '-n', NS]);
    await waitFor('member-2 removed', () => fleet.get('member-2') === undefined);
    expect(since(events, before)).toEqual([{ type: 'removed', name: 'member-2', reason: 'deleted' }]);
    expect(fleet.status().credentials.slots).toBe(slots - 1);
    // The old client has no credential any more: the fleet refuses to fetch one for a member it no longer has.
    await expect(whoamiThrough(client)).rejects.toMatchObject({ code: 'ERR_FLEET_CLOSED' });
  });

  it('`clusterprofile fleet status` prints the members as kubectl get does, and as JSON; `fleet watch` prints the events', async () => {
    const env = { ...process.env, KUBECONFIG: hubKubeconfig, KUBECACHEDIR: cacheRoot };
    const providers = await tempFile('providers.json', JSON.stringify(accessConfig));
    const table = await exec(
      process.execPath,
      [cli, 'fleet', 'status', '--namespace', NS, '--clusterprofile-provider-file', providers, '--fetch-timeout', '2s'],
      { env },
    );
    expect(table.stderr).toBe('');
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+PROVIDER\s+STATE\s+EXPIRES\s+LAST ERROR$/);
    expect(lines.find((line) => line.startsWith('member-1 '))).toMatch(/^member-1\s+token-request\s+ready\s+\d+m/);
    expect(lines.find((line) => line.startsWith('member-unknown-provider '))).toMatch(
      /invalid\s+.*ERR_NO_MATCHING_PROVIDER/,
    );
    expect(lines.find((line) => line.startsWith('member-hangs '))).toMatch(/failing\s+.*ERR_EXEC_TIMEOUT/);
    expect(table.code).toBe(0);
    // The CLI used the credentials the fleet stored: the shared cache served them (no new TokenRequest needed).
    const json = await exec(
      process.execPath,
      [
        cli,
        'fleet',
        'status',
        '-n',
        NS,
        '--clusterprofile-provider-file',
        providers,
        '--fetch-timeout',
        '2s',
        '-o',
        'json',
      ],
      { env },
    );
    expect(json.code, json.stderr).toBe(0);
    const status = JSON.parse(json.stdout) as { namespace: string; clusters: { name: string; state: string }[] };
    expect(status.namespace).toBe(NS);
    expect(status.clusters.find((row) => row.name === 'member-3')?.state).toBe('ready');

    // watch: the first list's events, then whatever happens, until --for runs out.
    const watch = await exec(
      process.execPath,
      [
        cli,
        'fleet',
        'watch',
        '-n',
        NS,
        '--clusterprofile-provider-file',
        providers,
        '--fetch-timeout',
        '2s',
        '--for',
        '5s',
        '-o',
        'json',
      ],
      { env },
    );
    expect(watch.code, watch.stderr).toBe(0);
    const printed = watch.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; name?: string; mode?: string; error?: { code: string } });
    expect(
      printed
        .filter((line) => line.type === 'added')
        .map((line) => line.name)
        .sort(),
    ).toEqual(['member-1', 'member-3', 'member-4']);
    expect(printed.find((line) => line.type === 'added')?.mode).toBe('in-process');
    expect(
      printed.find((line) => line.type === 'invalid' && line.name === 'member-unknown-provider')?.error?.code,
    ).toBe('ERR_NO_MATCHING_PROVIDER');
    expect(printed.find((line) => line.type === 'credentialError' && line.name === 'member-hangs')?.error?.code).toBe(
      'ERR_EXEC_TIMEOUT',
    );

    // The table form: a header and fixed columns, as `kubectl get -w` prints them — every cell starts under its
    // header, at least three spaces after the previous cell.
    const watchTable = await exec(
      process.execPath,
      [
        cli,
        'fleet',
        'watch',
        '-n',
        NS,
        '--clusterprofile-provider-file',
        providers,
        '--fetch-timeout',
        '2s',
        '--for',
        '5s',
      ],
      { env },
    );
    expect(watchTable.code, watchTable.stderr).toBe(0);
    const [header, ...rows] = watchTable.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^TIME {3,}EVENT {3,}NAME {3,}DETAIL$/);
    const starts = ['EVENT', 'NAME', 'DETAIL'].map((title) => header!.indexOf(title));
    expect(rows.filter((row) => / added {3,}member-[134] /.test(row))).toHaveLength(3);
    for (const row of rows) {
      const cells = [0, ...starts].map((start, index, all) => row.slice(start, all[index + 1]));
      for (const start of starts) {
        expect(row.slice(start - 3, start), row).toBe('   ');
        expect(row[start], row).not.toBe(' ');
      }
      expect(new Date(cells[0]!.trim()).toISOString(), row).toBe(cells[0]!.trim());
      expect(['added', 'updated', 'removed', 'unhealthy', 'credentialError', 'invalid', 'hubError']).toContain(
        cells[1]!.trim(),
      );
    }
    expect(rows.find((row) => row.includes('member-hangs') && row.includes('credentialError'))).toContain(
      'ERR_EXEC_TIMEOUT',
    );

    const usage = await exec(process.execPath, [cli, 'fleet', 'status', '--clusterprofile-provider-file', providers], {
      env,
    });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('namespace');
  });
});

describe('ClusterProfileFleet against a hub that refuses it', () => {
  it('a hub identity without list rights: ERR_FLEET_HUB_FORBIDDEN naming the verb, resource and namespace', async () => {
    const { controlPlane } = e2eContext();
    const nobody = await tempFile(
      'nobody.kubeconfig',
      stringify(
        kubeconfigDocument(controlPlane.server, caPem, 'e2e-fleet-nobody', await issueClientCert('e2e-fleet-nobody')),
      ),
    );
    const fleet = new ClusterProfileFleet({ namespace: NS, accessConfig, hub: { kubeconfig: nobody }, clients: false });
    try {
      await expect(fleet.start()).rejects.toMatchObject({
        code: 'ERR_FLEET_HUB_FORBIDDEN',
        message: expect.stringMatching(
          new RegExp(
            `refused to list clusterprofiles\\.multicluster\\.x-k8s\\.io in namespace ${NS} \\(HTTP 403\\): .*e2e-fleet-nobody`,
          ),
        ),
      });
    } finally {
      await fleet.close();
    }
  });

  it('an unreachable hub: ERR_FLEET_HUB_UNREACHABLE naming the verb, resource and namespace', async () => {
    const down = await tempFile(
      'down.kubeconfig',
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'h', cluster: { server: 'https://127.0.0.1:1' } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'h', context: { cluster: 'h', user: 'u' } }],
        'current-context': 'h',
      }),
    );
    const fleet = new ClusterProfileFleet({
      namespace: NS,
      accessConfig,
      hub: { kubeconfig: down, requestTimeoutMs: 3_000 },
      clients: false,
    });
    try {
      await expect(fleet.start()).rejects.toMatchObject({
        code: 'ERR_FLEET_HUB_UNREACHABLE',
        message: expect.stringContaining(`cannot list clusterprofiles.multicluster.x-k8s.io in namespace ${NS}`),
      });
    } finally {
      await fleet.close();
    }
  });

  it('the API server answers a watch from a compacted resourceVersion with 410, which the fleet treats as "list again"', async () => {
    const { controlPlane } = e2eContext();
    const admin = await kubectl(controlPlane.adminKubeconfig, [
      'get',
      '--raw',
      `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${NS}/clusterprofiles?watch=1&resourceVersion=1&timeoutSeconds=1`,
    ]);
    expect(`${admin.stdout}${admin.stderr}`).toMatch(/"code":410|too old resource version|Expired/);
  });
});
