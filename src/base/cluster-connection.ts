/**
 * The one mapping from a cluster's connection fields — a kubeconfig `Cluster`, KUBERNETES_EXEC_INFO `spec.cluster`,
 * a resolved ClusterProfile: they use the same names — to what the HTTP seam takes: the base URL, the TLS options
 * (trusted CA, server name, verification) and the proxy.
 */
import type { HttpClientOptions } from './http.js';

/** The connection fields of a kubeconfig / exec `Cluster` (kebab-case, as on the wire). */
export interface ClusterFields {
  server: string;
  /** Base64 of the PEM CA bundle. */
  'certificate-authority-data'?: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'proxy-url'?: string;
}

/** How to reach an API server, decoded. */
export interface ClusterConnection {
  server: string;
  /** PEM bundle to trust (the only roots then); absent = the system roots. */
  caPem?: string;
  tlsServerName?: string;
  insecureSkipTlsVerify?: boolean;
  proxyUrl?: string;
}

/**
 * Decodes a cluster's fields. `caPem` is for a CA the caller has read itself (kubeconfig `certificate-authority`
 * names a file); it wins over `certificate-authority-data`.
 *
 * @example
 * ```ts
 * connectionFromCluster({ server: 'https://api:6443', 'certificate-authority-data': b64, 'tls-server-name': 'api' });
 * // { server: 'https://api:6443', caPem: '-----BEGIN CERTIFICATE-----…', tlsServerName: 'api' }
 * ```
 */
export function connectionFromCluster(cluster: ClusterFields, options: { caPem?: string } = {}): ClusterConnection {
  const data = cluster['certificate-authority-data'];
  const caPem =
    options.caPem ?? (data === undefined || data === '' ? undefined : Buffer.from(data, 'base64').toString('utf8'));
  return {
    server: cluster.server,
    ...(caPem === undefined ? {} : { caPem }),
    ...(cluster['tls-server-name'] === undefined || cluster['tls-server-name'] === ''
      ? {}
      : { tlsServerName: cluster['tls-server-name'] }),
    ...(cluster['insecure-skip-tls-verify'] === true ? { insecureSkipTlsVerify: true } : {}),
    ...(cluster['proxy-url'] === undefined || cluster['proxy-url'] === '' ? {} : { proxyUrl: cluster['proxy-url'] }),
  };
}

/** The seam's TLS and proxy options for a connection, with an optional client certificate. */
export function connectionHttpOptions(
  connection: ClusterConnection,
  client?: { certPem: string; keyPem: string },
): Required<Pick<HttpClientOptions, 'tls'>> & Pick<HttpClientOptions, 'proxy'> {
  return {
    tls: {
      ...(connection.caPem === undefined ? {} : { caPem: connection.caPem }),
      ...(connection.tlsServerName === undefined ? {} : { servername: connection.tlsServerName }),
      ...(connection.insecureSkipTlsVerify === true ? { insecureSkipVerify: true } : {}),
      ...(client === undefined ? {} : { certPem: client.certPem, keyPem: client.keyPem }),
    },
    ...(connection.proxyUrl === undefined ? {} : { proxy: { url: connection.proxyUrl } }),
  };
}
