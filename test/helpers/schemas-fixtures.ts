// Realistic documents for the schema tests: the reference's examples and upstream-style objects. Each call returns a
// fresh copy, so a test may change it.

/** The ClusterProfile example of the reference (v1alpha1). */
export function referenceProfile(): Record<string, any> {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name: 'spoke-1', namespace: 'fleet', labels: { 'x-k8s.io/cluster-manager': 'demo' } },
    spec: { displayName: 'spoke-1', clusterManager: { name: 'demo' } },
    status: {
      version: { kubernetes: '1.34.1' },
      accessProviders: [
        {
          name: 'tenant-cert',
          cluster: {
            server: 'https://10.0.0.3:6443',
            'certificate-authority-data': 'LS0tLS1CRUdJTi4uLg==',
            extensions: [
              { name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'spoke-1' } },
              { name: 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs', extension: { TENANT_ID: 't-1' } },
            ],
          },
        },
      ],
    },
  };
}

/** A v1alpha1 profile as a cluster manager writes it today: conditions, properties, both provider lists. */
export function upstreamProfileV1alpha1(): Record<string, any> {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: {
      name: 'member-east',
      namespace: 'fleet-system',
      labels: { 'x-k8s.io/cluster-manager': 'open-cluster-management', 'multicluster.x-k8s.io/clusterset': 'prod' },
      annotations: { 'example.com/owner': 'platform' },
      uid: '0b5c4f3e-52f5-4a5e-9f0e-1f0c2a7c9d11',
      resourceVersion: '1234',
      generation: 3,
      creationTimestamp: '2026-11-01T08:00:00Z',
    },
    spec: { displayName: 'member east', clusterManager: { name: 'open-cluster-management' } },
    status: {
      conditions: [
        {
          type: 'ControlPlaneHealthy',
          status: 'True',
          reason: 'Healthy',
          message: 'the control plane is healthy',
          lastTransitionTime: '2026-11-20T10:00:00Z',
          observedGeneration: 3,
        },
      ],
      version: { kubernetes: '1.34.1' },
      properties: [{ name: 'location', value: 'eu-west-1', lastObservedTime: '2026-11-20T10:00:00Z' }],
      credentialProviders: [
        {
          name: 'secretreader',
          cluster: { server: 'https://member-east.example.com:6443', 'certificate-authority': '/etc/ca.crt' },
        },
      ],
      accessProviders: [
        {
          name: 'token-request',
          cluster: {
            server: 'https://member-east.example.com:6443',
            'tls-server-name': 'kubernetes.default.svc',
            'certificate-authority-data': 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==',
            'proxy-url': 'socks5://proxy.example.com:1080',
            'disable-compression': true,
            extensions: [
              {
                name: 'client.authentication.k8s.io/exec',
                extension: { clusterName: 'member-east', audience: 'fleet' },
              },
            ],
          },
        },
        { name: 'oidc', cluster: { server: 'https://[2001:db8::1]:6443', 'insecure-skip-tls-verify': true } },
      ],
    },
  };
}

/** The same cluster in v1alpha2 (keyed lists, no credentialProviders). */
export function upstreamProfileV1alpha2(): Record<string, any> {
  const profile = upstreamProfileV1alpha1();
  profile.apiVersion = 'multicluster.x-k8s.io/v1alpha2';
  profile.metadata.labels['multicluster.x-k8s.io/inventory-member-id'] = 'east-1';
  delete profile.status.credentialProviders;
  return profile;
}

/** The providers-file example of the reference. */
export function referenceProvidersFile(): Record<string, any> {
  return {
    providers: [
      {
        name: 'tenant-cert',
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: '/usr/local/bin/clusterprofile-tenant-cert',
          args: ['--cluster-id', 'hub'],
          provideClusterInfo: true,
          interactiveMode: 'Never',
        },
      },
      {
        name: 'oidc',
        execConfig: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: 'clusterprofile-oidc' },
        profileSourcedCLIArgsPolicy: 'Append',
        profileSourcedEnvVarsPolicy: 'Replace',
      },
    ],
  };
}

export const v1 = 'client.authentication.k8s.io/v1';
export const v1beta1 = 'client.authentication.k8s.io/v1beta1';

/** KUBERNETES_EXEC_INFO as client-go sets it with provideClusterInfo. */
export function execInput(apiVersion: string = v1): Record<string, any> {
  return {
    kind: 'ExecCredential',
    apiVersion,
    spec: {
      interactive: false,
      cluster: {
        server: 'https://10.0.0.3:6443',
        'tls-server-name': 'spoke-1.internal',
        'certificate-authority-data': 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJ\nkakNDQVJ5Z0F3SUJBZ0lSQUs9PQo=',
        'proxy-url': 'http://proxy:3128',
        'disable-compression': false,
        config: { clusterName: 'spoke-1' },
      },
    },
  };
}

/** A plugin's stdout document with the given status. */
export function execOutput(status: unknown, apiVersion: string = v1): Record<string, any> {
  return { apiVersion, kind: 'ExecCredential', status };
}

export const certPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
export const keyPem = '-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n';
