/**
 * The v1alpha2 member-ID label on the real control plane: ClusterProfileFleet keys members by
 * `multicluster.x-k8s.io/inventory-member-id` when a profile has it. Two profiles naming one member are reported
 * (`invalid` with ERR_FLEET_DUPLICATE_MEMBER naming both profiles and the label), engaged once, and the rest of the
 * inventory is unaffected; when the first profile is deleted, or relabelled, the waiting one takes the member over.
 * Runs on whichever CRD
 * test/helpers/e2e-crd.ts selects (labels are the same in every version).
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterProfileFleet, INVENTORY_MEMBER_ID_LABEL, type FleetEvent } from '../../src/library/index.js';
import { clusterProfileDocument, e2eContext, issueClientCert, kubectl, tempFile } from '../helpers/controlplane-e2e.js';
import { clusterProfileCrdFile, profileApiVersion } from '../helpers/e2e-crd.js';

const plugin = fileURLToPath(new URL('./fixtures/client-cert-plugin.mjs', import.meta.url));
const NS = 'fleet-member-id-e2e';
const USER = 'e2e-fleet-member-id';
const PROVIDER = 'e2e-client-cert';

let caPem = '';

async function admin(args: string[], input?: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const result = await kubectl(controlPlane.adminKubeconfig, args, input === undefined ? {} : { input });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** Creates a profile labelled with `memberId` (none when undefined) and writes its status, as a cluster manager does. */
async function createProfile(name: string, memberId: string | undefined): Promise<void> {
  const { controlPlane } = e2eContext();
  const { status, ...object } = clusterProfileDocument({
    name,
    namespace: NS,
    provider: PROVIDER,
    server: controlPlane.server,
    caPem,
  });
  object['apiVersion'] = profileApiVersion;
  if (memberId !== undefined)
    object['metadata'] = { name, namespace: NS, labels: { [INVENTORY_MEMBER_ID_LABEL]: memberId } };
  await admin(['create', '-f', '-'], JSON.stringify(object));
  await admin([
    'patch',
    'clusterprofile',
    name,
    '-n',
    NS,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
  ]);
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

describe('ClusterProfileFleet keys members by the inventory-member-id label', () => {
  let fleet: ClusterProfileFleet;
  const events: FleetEvent[] = [];

  beforeAll(async () => {
    const { controlPlane } = e2eContext();
    caPem = await readFile(controlPlane.caFile, 'utf8');
    await admin(['apply', '-f', clusterProfileCrdFile]);
    await admin(['wait', '--for=condition=Established', '--timeout=60s', 'crd/clusterprofiles.multicluster.x-k8s.io']);
    await admin(['create', 'namespace', NS]);
    const pair = await issueClientCert(USER, ['e2e-fleet']);
    const accessConfig = {
      providers: [
        {
          name: PROVIDER,
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1' as const,
            command: process.execPath,
            args: [plugin],
            env: [
              { name: 'E2E_PLUGIN_CERT_FILE', value: await tempFile('member-id.crt', pair.cert) },
              { name: 'E2E_PLUGIN_KEY_FILE', value: await tempFile('member-id.key', pair.key) },
            ],
            provideClusterInfo: true,
            interactiveMode: 'Never' as const,
          },
        },
      ],
    };
    // Two profiles for member m-1 (first a, then b), one for m-2, one without the label.
    await createProfile('ocm-a', 'm-1');
    await createProfile('ocm-b', 'm-1');
    await createProfile('ocm-c', 'm-2');
    await createProfile('plain', undefined);
    fleet = new ClusterProfileFleet({
      namespace: NS,
      accessConfig,
      hub: { kubeconfig: controlPlane.adminKubeconfig },
      clients: false,
    });
    for (const type of ['added', 'removed', 'invalid'] as const) fleet.on(type, (event) => events.push(event));
    await fleet.start();
    await fleet.settled();
  }, 120_000);

  afterAll(async () => {
    await fleet?.close();
    await admin(['delete', 'clusterprofiles', '--all', '-n', NS, '--wait=true']).catch(() => undefined);
  });

  it('engages one member per member ID, reports the second profile with both names and the label, and leaves the rest alone', async () => {
    await waitFor('three members engaged', () =>
      ['ocm-a', 'ocm-c', 'plain'].every((name) => fleet.get(name)?.engaged === true),
    );
    expect(fleet.list().map((member) => [member.name, member.memberKey, member.state, member.engaged])).toEqual([
      ['ocm-a', 'm-1', 'ready', true],
      ['ocm-b', 'm-1', 'invalid', false],
      ['ocm-c', 'm-2', 'ready', true],
      ['plain', 'plain', 'ready', true],
    ]);
    const error = fleet.get('ocm-b')?.error as { code?: string; message?: string; path?: string };
    expect(error).toMatchObject({
      code: 'ERR_FLEET_DUPLICATE_MEMBER',
      path: `$.metadata.labels['${INVENTORY_MEMBER_ID_LABEL}']`,
    });
    expect(error.message).toContain(`${NS}/ocm-a`);
    expect(error.message).toContain(`${NS}/ocm-b`);
    expect(error.message).toContain(INVENTORY_MEMBER_ID_LABEL);
    expect(
      events
        .filter((event) => event.type === 'added')
        .map((event) => event.name)
        .sort(),
    ).toEqual(['ocm-a', 'ocm-c', 'plain']);
    expect(events.filter((event) => event.type === 'invalid').map((event) => event.name)).toEqual(['ocm-b']);
    expect(fleet.status().counts).toMatchObject({ ready: 3, invalid: 1 });
  });

  it('the first profile deleted: the second takes the member over; nobody else moves', async () => {
    events.length = 0;
    await admin(['delete', 'clusterprofile', 'ocm-a', '-n', NS, '--wait=true']);
    await waitFor('ocm-b engaged', () => fleet.get('ocm-b')?.engaged === true);
    expect(fleet.get('ocm-a')).toBeUndefined();
    expect(fleet.get('ocm-b')).toMatchObject({ memberKey: 'm-1', state: 'ready', error: undefined });
    expect(events.map((event) => [event.type, 'name' in event ? event.name : ''])).toEqual([
      ['removed', 'ocm-a'],
      ['added', 'ocm-b'],
    ]);
  });

  it('relabelling: a profile taking a held member ID is reported; the holder moving to another ID lets it in', async () => {
    events.length = 0;
    const label = (name: string, id: string) =>
      admin(['label', 'clusterprofile', name, '-n', NS, '--overwrite', `${INVENTORY_MEMBER_ID_LABEL}=${id}`]);
    await label('plain', 'm-1');
    await waitFor('plain reported', () => fleet.get('plain')?.state === 'invalid');
    expect(fleet.get('plain')?.error).toMatchObject({ code: 'ERR_FLEET_DUPLICATE_MEMBER' });
    expect(fleet.get('ocm-b')).toMatchObject({ memberKey: 'm-1', engaged: true });
    await label('ocm-b', 'm-3');
    await waitFor('plain engaged', () => fleet.get('plain')?.engaged === true);
    expect(fleet.list().map((member) => [member.name, member.memberKey, member.engaged])).toEqual([
      ['ocm-b', 'm-3', true],
      ['ocm-c', 'm-2', true],
      ['plain', 'm-1', true],
    ]);
    // ocm-b's access did not change: it was never disengaged.
    expect(events.map((event) => [event.type, 'name' in event ? event.name : ''])).toEqual([
      ['removed', 'plain'],
      ['invalid', 'plain'],
      ['added', 'plain'],
    ]);
  });
});
