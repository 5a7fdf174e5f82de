/**
 * The connection to a member cluster as an exec plugin receives it (KUBERNETES_EXEC_INFO `spec.cluster`, or a
 * resolved ClusterProfile) in the shape the transport takes: the base64 CA decoded, every TLS and proxy field carried.
 */
import type { ExecCluster } from '../core/exec-credential.js';
import type { KubeEndpoint } from './types.js';

export function endpointFromCluster(cluster: ExecCluster): KubeEndpoint {
  const ca = cluster['certificate-authority-data'];
  return {
    server: cluster.server,
    ...(ca === undefined || ca === '' ? {} : { caPem: Buffer.from(ca, 'base64').toString('utf8') }),
    ...(cluster['tls-server-name'] === undefined ? {} : { tlsServerName: cluster['tls-server-name'] }),
    ...(cluster['insecure-skip-tls-verify'] === true ? { insecureSkipTlsVerify: true } : {}),
    ...(cluster['proxy-url'] === undefined ? {} : { proxyUrl: cluster['proxy-url'] }),
  };
}
