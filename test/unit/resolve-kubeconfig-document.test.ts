import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { kubeconfigFromAccess, renderKubeconfig } from '../../src/resolve/kubeconfig-document.js';
import type { ResolvedClusterAccess } from '../../src/resolve/types.js';
import { deepFreeze, objectsOf } from '../helpers/library-fixtures.js';

function access(): ResolvedClusterAccess {
  return {
    providerName: 'tenant-cert',
    profile: { namespace: 'fleet', name: 'spoke-1' },
    cluster: {
      server: 'https://10.0.0.3:6443',
      'certificate-authority-data': 'Q0E=',
      'tls-server-name': 'api.spoke-1',
      'insecure-skip-tls-verify': false,
      'proxy-url': 'http://proxy:3128',
      'disable-compression': true,
      config: { clusterName: 'spoke-1', nested: { list: [1, 2] } },
    },
    exec: {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: '/usr/local/bin/clusterprofile-tenant-cert',
      args: ['--cluster-id', 'hub'],
      env: [{ name: 'TENANT_ID', value: 't-1' }],
      provideClusterInfo: true,
      interactiveMode: 'Never',
      installHint: 'npm i -g clusterprofile-credentials',
    },
  };
}

describe('renderKubeconfig', () => {
  it('renders the cluster, the exec user and a context named after the profile', () => {
    expect(parse(renderKubeconfig(access()))).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'fleet/spoke-1',
          cluster: {
            server: 'https://10.0.0.3:6443',
            'certificate-authority-data': 'Q0E=',
            'tls-server-name': 'api.spoke-1',
            'insecure-skip-tls-verify': false,
            'proxy-url': 'http://proxy:3128',
            'disable-compression': true,
            extensions: [
              {
                name: 'client.authentication.k8s.io/exec',
                extension: { clusterName: 'spoke-1', nested: { list: [1, 2] } },
              },
            ],
          },
        },
      ],
      users: [
        {
          name: 'fleet/spoke-1',
          user: {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: '/usr/local/bin/clusterprofile-tenant-cert',
              args: ['--cluster-id', 'hub'],
              env: [{ name: 'TENANT_ID', value: 't-1' }],
              provideClusterInfo: true,
              interactiveMode: 'Never',
              installHint: 'npm i -g clusterprofile-credentials',
            },
          },
        },
      ],
      contexts: [{ name: 'fleet/spoke-1', context: { cluster: 'fleet/spoke-1', user: 'fleet/spoke-1' } }],
      'current-context': 'fleet/spoke-1',
      preferences: {},
    });
  });

  it('is deterministic and leaves its (frozen) input alone', () => {
    const input = deepFreeze(access());
    const a = renderKubeconfig(input);
    expect(renderKubeconfig(input)).toBe(a);
    expect(a.startsWith('apiVersion: "v1"\nkind: "Config"\nclusters:\n')).toBe(true);
    const doc = kubeconfigFromAccess(input);
    const inputs = objectsOf(input);
    for (const object of objectsOf(doc)) expect(inputs.has(object)).toBe(false);
  });

  it('omits what is not set and uses the bare name without a namespace; --context-name overrides', () => {
    const minimal: ResolvedClusterAccess = {
      providerName: 'p',
      profile: { name: 'spoke-2' },
      cluster: { server: 'https://spoke-2:6443' },
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        command: 'plugin',
        args: [],
        env: [],
        provideClusterInfo: false,
        interactiveMode: 'Never',
      },
    };
    const doc = kubeconfigFromAccess(minimal);
    expect(doc.clusters[0]).toEqual({ name: 'spoke-2', cluster: { server: 'https://spoke-2:6443' } });
    expect(doc.users[0]!.user.exec).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      command: 'plugin',
      provideClusterInfo: false,
      interactiveMode: 'Never',
    });
    expect(kubeconfigFromAccess(minimal, { name: 'mine' })['current-context']).toBe('mine');
  });

  it('quotes every string, so YAML 1.1 readers (kubectl) cannot misread yes/on/12:30/0o12 as non-strings', () => {
    const tricky = access();
    tricky.exec.env = [
      { name: 'FLAG', value: 'yes' },
      { name: 'ON', value: 'on' },
      { name: 'T', value: '12:30' },
      { name: 'O', value: '0o12' },
    ];
    const text = renderKubeconfig(tricky);
    for (const value of ['yes', 'on', '12:30', '0o12']) expect(text).toContain(`value: "${value}"`);
    expect(parse(text, { version: '1.1' }).users[0].user.exec.env).toEqual(tricky.exec.env);
  });
});
