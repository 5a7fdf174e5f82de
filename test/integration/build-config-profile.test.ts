import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfigFromClusterProfile } from '../../src/client-node/build-config.js';
import { ExecCredentialCache } from '../../src/exec/authenticator.js';
import type { AccessConfig, ClusterProfile } from '../../src/resolve/types.js';
import {
  certFingerprint,
  createTestCa,
  startHttpsServer,
  type KeyPairPem,
  type TestCa,
  type TestHttpsServer,
} from '../helpers/tls.js';

const PLUGIN = fileURLToPath(new URL('../fixtures/plugins/plugin.mjs', import.meta.url));
const V1 = 'client.authentication.k8s.io/v1' as const;
const indent = (pem: string) =>
  pem
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');

function profile(
  server: string,
  caData: string,
  providers: { name: string; extensions?: { name: string; extension: unknown }[] }[],
): ClusterProfile {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name: 'spoke-1', namespace: 'fleet' },
    spec: { displayName: 'spoke-1', clusterManager: { name: 'demo' } },
    status: {
      accessProviders: providers.map((p) => ({
        name: p.name,
        cluster: {
          server,
          'certificate-authority-data': caData,
          ...(p.extensions ? { extensions: p.extensions } : {}),
        },
      })),
    },
  };
}

describe('buildConfigFromClusterProfile: ClusterProfile + providers file → working client-node KubeConfig', () => {
  let ca: TestCa;
  let server: TestHttpsServer;
  let dir: string;
  let client: KeyPairPem;
  beforeAll(async () => {
    ca = await createTestCa();
    server = await startHttpsServer({
      ca,
      clientCert: 'require',
      handler: async (_r, req, res) => {
        // A list with labelSelector=slow is answered after 3 s (a request in flight when its client is revoked).
        if (req.url?.includes('labelSelector=slow') === true) await new Promise((resolve) => setTimeout(resolve, 3000));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'NamespaceList',
            apiVersion: 'v1',
            metadata: {},
            items: [{ metadata: { name: 'kube-system' } }],
          }),
        );
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'cpc-profile-'));
    client = await ca.issueClientCert('system:admin', { groups: ['system:masters'] });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('`cat` of a YAML ExecCredential with a client certificate (as upstream’s integration test) reaches a server that requires one', async () => {
    const file = join(dir, 'cred.yaml');
    writeFileSync(
      file,
      `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  clientCertificateData: |\n${indent(client.cert)}\n  clientKeyData: |\n${indent(client.key)}\n`,
    );
    const accessConfig: AccessConfig = {
      providers: [
        {
          name: 'cat-provider',
          execConfig: { apiVersion: V1, command: 'cat', args: [file], interactiveMode: 'Never' },
        },
      ],
    };
    const kc = buildConfigFromClusterProfile(
      profile(server.url, ca.certBase64, [{ name: 'cat-provider' }]),
      accessConfig,
      {
        cache: new ExecCredentialCache(),
      },
    );
    const list = await kc.makeApiClient(CoreV1Api).listNamespace();
    expect(list.items[0]?.metadata?.name).toBe('kube-system');
    expect(server.requests.at(-1)?.clientCert?.fingerprint256).toBe(certFingerprint(client.cert));
    expect(kc.getCurrentCluster()?.server).toBe(server.url);
  });

  it('close({ revoke: true }) aborts a request in flight and refuses every later one with ERR_FLEET_CLOSED', async () => {
    const file = join(dir, 'cred-revoke.yaml');
    writeFileSync(
      file,
      `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  clientCertificateData: |\n${indent(client.cert)}\n  clientKeyData: |\n${indent(client.key)}\n`,
    );
    const kc = buildConfigFromClusterProfile(
      profile(server.url, ca.certBase64, [{ name: 'cat-provider' }]),
      {
        providers: [
          {
            name: 'cat-provider',
            execConfig: { apiVersion: V1, command: 'cat', args: [file], interactiveMode: 'Never' },
          },
        ],
      },
      { cache: new ExecCredentialCache() },
    );
    const api = kc.makeApiClient(CoreV1Api);
    expect((await api.listNamespace()).items).toHaveLength(1);
    const seen = server.requests.length;
    const inFlight = api.listNamespace({ labelSelector: 'slow' });
    inFlight.catch(() => undefined);
    while (server.requests.length === seen) await new Promise((resolve) => setTimeout(resolve, 10));
    const started = Date.now();
    await kc.close({ revoke: true });
    await expect(inFlight).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2500);
    await expect(api.listNamespace()).rejects.toMatchObject({ code: 'ERR_FLEET_CLOSED' });
    expect(server.requests.length).toBe(seen + 1);
  });

  it('the plugin gets the profile’s exec extension as spec.cluster.config and the additional args/envs by policy; inputs untouched', async () => {
    const accessConfig: AccessConfig = {
      providers: [
        { name: 'not-listed', execConfig: { apiVersion: V1, command: '/nope', interactiveMode: 'Never' } },
        {
          name: 'echo',
          execConfig: {
            apiVersion: V1,
            command: PLUGIN,
            args: ['echo-info'],
            env: [
              { name: 'ECHO_VARS', value: 'CLIENT_ID,TENANT' },
              { name: 'CLIENT_ID', value: 'from-file' },
            ],
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
          profileSourcedCLIArgsPolicy: 'Append',
          profileSourcedEnvVarsPolicy: 'Replace',
        },
      ],
    };
    const p = profile(server.url, ca.certBase64, [
      {
        name: 'echo',
        extensions: [
          { name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'spoke-1' } },
          { name: 'clusterprofiles.multicluster.x-k8s.io/exec/additional-args', extension: ['--sleep', '1'] },
          {
            name: 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs',
            extension: { CLIENT_ID: 'from-profile', TENANT: 't-1' },
          },
        ],
      },
    ]);
    const before = JSON.stringify([p, accessConfig]);
    const kc = buildConfigFromClusterProfile(p, accessConfig, { cache: new ExecCredentialCache() });
    const again = buildConfigFromClusterProfile(p, accessConfig, { cache: new ExecCredentialCache() });
    expect(JSON.stringify([p, accessConfig])).toBe(before);
    expect(again.access).toEqual(kc.access);
    expect(kc.access.exec.args).toEqual(['echo-info', '--sleep', '1']);
    const credential = await kc.authenticator.getCredential();
    const seen = JSON.parse(Buffer.from(credential.token!, 'base64').toString());
    expect(seen.info.spec.cluster).toEqual({
      server: server.url,
      'certificate-authority-data': ca.certBase64,
      config: { clusterName: 'spoke-1' },
    });
    expect(seen.env).toEqual({ CLIENT_ID: 'from-profile', TENANT: 't-1' });
  });

  it('bad input fails at build time with a stable code and runs nothing', () => {
    const accessConfig: AccessConfig = {
      providers: [{ name: 'other', execConfig: { apiVersion: V1, command: '/nope', interactiveMode: 'Never' } }],
    };
    expect(() =>
      buildConfigFromClusterProfile(profile(server.url, ca.certBase64, [{ name: 'echo' }]), accessConfig),
    ).toThrow(
      expect.objectContaining({
        code: 'ERR_NO_MATCHING_PROVIDER',
        message: 'no matching cluster accessor found for cluster profile "spoke-1"',
      }),
    );
    expect(() =>
      buildConfigFromClusterProfile(profile(server.url, ca.certBase64, [{ name: 'other' }]), {
        providers: [{ name: 'other' }],
      }),
    ).toThrow(expect.objectContaining({ code: 'ERR_NO_EXEC_CONFIG' }));
  });
});
