/**
 * How a server is verified and who we are to it: the seam's {@link TlsOptions}, and the one mapping of them to the
 * options node's TLS takes (`ca`, `cert`, `key`, `servername`, `rejectUnauthorized`) — for the seam's own sockets and
 * for clients that hand TLS options to another library (client-node's agents, undici's dispatchers).
 */

/** How the server is verified and who we are to it. */
export interface TlsOptions {
  /** PEM bundle: when given, the only roots trusted (the system roots are not). */
  caPem?: string;
  /** Client certificate and its key (PEM). */
  certPem?: string;
  keyPem?: string;
  /** The name verified in (and sent as SNI for) the server certificate, instead of the URL's host. */
  servername?: string;
  /** Verification off: only when set to true explicitly. */
  insecureSkipVerify?: boolean;
}

/** {@link TlsOptions} as node's `tls.connect` (and https.Agent, undici's `connect`) take them. */
export interface NodeTlsOptions {
  ca?: string;
  /** Set with `ca`: every certificate of the bundle is a trust anchor, as in Go's crypto/x509 (client-go). */
  allowPartialTrustChain?: boolean;
  cert?: string;
  key?: string;
  servername?: string;
  rejectUnauthorized: boolean;
}

/**
 * The node TLS options of `tls`: only the fields it sets, and verification on unless it is explicitly off. A given CA
 * bundle is trusted as client-go trusts `certificate-authority-data`: each certificate in it is an anchor, so a bundle
 * holding the server's own (CA-issued) certificate verifies it — what Open Cluster Management's cluster-proxy
 * publishes for its user server. OpenSSL, by default, would want the chain up to a self-signed root.
 */
export function nodeTlsOptions(tls: TlsOptions = {}): NodeTlsOptions {
  return {
    ...(tls.caPem === undefined ? {} : { ca: tls.caPem, allowPartialTrustChain: true }),
    ...(tls.certPem === undefined ? {} : { cert: tls.certPem }),
    ...(tls.keyPem === undefined ? {} : { key: tls.keyPem }),
    ...(tls.servername === undefined ? {} : { servername: tls.servername }),
    rejectUnauthorized: tls.insecureSkipVerify !== true,
  };
}
