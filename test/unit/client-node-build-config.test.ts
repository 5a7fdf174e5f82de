import { ExecAuth } from '@kubernetes/client-node/dist/exec_auth.js';
import { describe, expect, it } from 'vitest';
import { ClusterProfileKubeConfig } from '../../src/client-node/build-config.js';
import { ExecCredentialCache } from '../../src/exec/authenticator.js';
import type { ResolvedClusterAccess } from '../../src/resolve/types.js';

const access: ResolvedClusterAccess = {
  providerName: 'tenant-cert',
  profile: { namespace: 'fleet', name: 'spoke-1' },
  cluster: {
    server: 'https://10.0.0.3:6443',
    'certificate-authority-data': 'Q0E=',
    'tls-server-name': 'kube.internal',
    'insecure-skip-tls-verify': false,
    'proxy-url': 'http://proxy:3128',
    config: { clusterName: 'spoke-1' },
  },
  exec: {
    apiVersion: 'client.authentication.k8s.io/v1',
    command: 'p',
    args: [],
    env: [],
    interactiveMode: 'Never',
    provideClusterInfo: true,
  },
};

describe('ClusterProfileKubeConfig (no request made)', () => {
  it('maps the cluster fields into client-node’s Cluster', () => {
    const kc = new ClusterProfileKubeConfig(access, new ExecCredentialCache({ now: () => 0 }));
    expect(kc.getCurrentCluster()).toEqual({
      name: 'fleet/spoke-1',
      server: 'https://10.0.0.3:6443',
      caData: 'Q0E=',
      tlsServerName: 'kube.internal',
      skipTLSVerify: false,
      proxyUrl: 'http://proxy:3128',
    });
  });

  it('presents a user client-node’s built-in exec does not claim (no exec, token, cert or auth provider)', () => {
    const kc = new ClusterProfileKubeConfig(access, new ExecCredentialCache({ now: () => 0 }));
    const user = kc.getCurrentUser()!;
    expect(user).toEqual({ name: 'tenant-cert@fleet/spoke-1' });
    expect(new ExecAuth().isAuthProvider(user)).toBe(false);
  });

  it('shares the authenticator of the same plugin input through the cache, and runs nothing when built', () => {
    const cache = new ExecCredentialCache({ now: () => 0 });
    const a = new ClusterProfileKubeConfig(access, cache);
    const b = new ClusterProfileKubeConfig(structuredClone(access), cache);
    expect(cache.size).toBe(0);
    expect(a.authenticator).toBe(b.authenticator);
    expect(a.authenticator.execCount).toBe(0);
    const other = new ClusterProfileKubeConfig(
      { ...access, cluster: { ...access.cluster, config: { clusterName: 'spoke-2' } } },
      cache,
    );
    expect(other.authenticator).not.toBe(a.authenticator);
  });
});
