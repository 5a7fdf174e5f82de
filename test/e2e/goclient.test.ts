/**
 * The Go reference library as a client: test/e2e/goclient uses sigs.k8s.io/cluster-inventory-api pkg/access
 * (NewFromFile, BuildConfigFromCP) and client-go to list namespaces, authenticating through the exec plugin our
 * providers file names. Here the plugin is a fixture that hands out a client certificate from the client CA; the
 * scenarios with our own plugins reuse {@link runGoclient}.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  applyAsAdmin,
  clusterProfileDocument,
  e2eContext,
  exec,
  issueClientCert,
  tempFile,
  type ExecResult,
} from '../helpers/controlplane-e2e.js';

const plugin = fileURLToPath(new URL('./fixtures/client-cert-plugin.mjs', import.meta.url));

/** Runs the Go client against a providers file and a ClusterProfile (both written to temp files). */
async function runGoclient(providers: unknown, profile: unknown): Promise<ExecResult> {
  const { binaries } = e2eContext();
  const providersFile = await tempFile('providers.json', JSON.stringify(providers));
  const profileFile = await tempFile('clusterprofile.yaml', stringify(profile));
  return exec(binaries.goclient, [
    '--providers-file',
    providersFile,
    '--clusterprofile',
    profileFile,
    '--timeout',
    '60s',
  ]);
}

async function pluginProviders(user: string, recordFile?: string): Promise<unknown> {
  const pair = await issueClientCert(user);
  const certFile = await tempFile(`${user}.crt`, pair.cert);
  const keyFile = await tempFile(`${user}.key`, pair.key);
  return {
    providers: [
      {
        name: 'e2e-client-cert',
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: [plugin],
          env: [
            { name: 'E2E_PLUGIN_CERT_FILE', value: certFile },
            { name: 'E2E_PLUGIN_KEY_FILE', value: keyFile },
            ...(recordFile === undefined ? [] : [{ name: 'E2E_PLUGIN_RECORD_FILE', value: recordFile }]),
          ],
          provideClusterInfo: true,
          interactiveMode: 'Never',
        },
      },
    ],
  };
}

describe('Go reference client (cluster-inventory-api pkg/access + client-go)', () => {
  beforeAll(async () => {
    await applyAsAdmin({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRole',
          metadata: { name: 'e2e-namespace-lister' },
          rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['list'] }],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: 'e2e-goclient-namespace-lister' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'e2e-namespace-lister' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'e2e-goclient' }],
        },
      ],
    });
  });

  it('lists namespaces through the exec plugin named by the providers file, with the cluster info passed to it', async () => {
    const { controlPlane } = e2eContext();
    const recordFile = path.join(path.dirname(await tempFile('placeholder', '')), 'exec-info.json');
    const profile = clusterProfileDocument({
      name: 'member-1',
      namespace: 'fleet',
      provider: 'e2e-client-cert',
      server: controlPlane.server,
      caPem: await readFile(controlPlane.caFile, 'utf8'),
      execExtension: { audience: 'member-1' },
    });
    const result = await runGoclient(await pluginProviders('e2e-goclient', recordFile), profile);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual(expect.arrayContaining(['default', 'kube-system', 'kube-public']));

    // client-go handed the plugin the cluster from the ClusterProfile, including the per-cluster exec config.
    const info = JSON.parse(await readFile(recordFile, 'utf8')) as {
      spec: { cluster?: { server: string; config?: unknown } };
    };
    expect(info.spec.cluster?.server).toBe(controlPlane.server);
    expect(info.spec.cluster?.config).toEqual({ audience: 'member-1' });
  });

  it("fails with the API server's 403 on stderr and a non-zero exit when the plugin's identity has no rights", async () => {
    const { controlPlane } = e2eContext();
    const profile = clusterProfileDocument({
      name: 'member-1',
      namespace: 'fleet',
      provider: 'e2e-client-cert',
      server: controlPlane.server,
      caPem: await readFile(controlPlane.caFile, 'utf8'),
    });
    const result = await runGoclient(await pluginProviders('e2e-nobody'), profile);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('User "e2e-nobody" cannot list resource "namespaces"');
  });

  it('fails before any request when no provider in the file matches the ClusterProfile', async () => {
    const { controlPlane } = e2eContext();
    const profile = clusterProfileDocument({
      name: 'member-2',
      namespace: 'fleet',
      provider: 'some-other-provider',
      server: controlPlane.server,
      caPem: await readFile(controlPlane.caFile, 'utf8'),
    });
    const result = await runGoclient(await pluginProviders('e2e-goclient'), profile);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no matching cluster accessor found for cluster profile "member-2"');
  });
});
