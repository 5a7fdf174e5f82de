/**
 * A reusable test PKI and HTTPS server: a CA made on the fly, server certificates with IP/DNS SANs, client
 * certificates (CN = user, O = groups, as the Kubernetes API server reads them), and a node:https server on
 * 127.0.0.1 port 0 that records every request (bearer token, client certificate) and can require a client
 * certificate. ECDSA P-256 keys: fast to make.
 *
 * Example:
 *   const ca = await createTestCa();
 *   const server = await startHttpsServer({ ca, clientCert: 'require' });
 *   // ... requests to server.url ...
 *   server.requests[0]?.clientCert?.subjectCN; await server.close();
 */
import { createHash, webcrypto, X509Certificate as NodeX509Certificate } from 'node:crypto';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
// @peculiar/x509 configured once for the whole project (crypto provider, the Reflect shim it needs).
import { x509 } from '../../src/wire/tenant-cert/x509.js';

const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** A certificate and its private key, both PEM. */
export interface KeyPairPem {
  cert: string;
  key: string;
}

export interface IssueOptions {
  notBefore?: Date;
  notAfter?: Date;
}

export interface ServerCertOptions extends IssueOptions {
  /** IP SANs; default `['127.0.0.1']`. */
  ips?: string[];
  /** DNS SANs; default `['localhost']`. */
  dns?: string[];
}

export interface ClientCertOptions extends IssueOptions {
  /** Subject O values: Kubernetes groups. */
  groups?: string[];
}

export interface TestCa {
  /** PEM of the CA certificate. */
  cert: string;
  /** Base64 of the PEM: what kubeconfig `certificate-authority-data` holds. */
  certBase64: string;
  issueServerCert(options?: ServerCertOptions): Promise<KeyPairPem>;
  /** A client certificate with CN = `commonName`, O = each group. */
  issueClientCert(commonName: string, options?: ClientCertOptions): Promise<KeyPairPem>;
}

function toPem(der: ArrayBuffer, label: string): string {
  const b64 = Buffer.from(der).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

async function keyPair(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  return toPem(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

function escapeDn(value: string): string {
  return value.replace(/([,+"\\<>;=])/g, '\\$1');
}

/** Makes a fresh self-signed CA (valid from an hour ago for a day unless told otherwise). */
export async function createTestCa(name = 'cpc-test-ca', options: IssueOptions = {}): Promise<TestCa> {
  const caKeys = await keyPair();
  const notBefore = options.notBefore ?? new Date(Date.now() - 3600_000);
  const notAfter = options.notAfter ?? new Date(Date.now() + 86400_000);
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${escapeDn(name)}`,
    keys: caKeys,
    notBefore,
    notAfter,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const caPem = `${caCert.toString('pem')}\n`;

  async function issue(subject: string, extensions: x509.Extension[], o: IssueOptions): Promise<KeyPairPem> {
    const keys = await keyPair();
    const cert = await x509.X509CertificateGenerator.create({
      subject,
      issuer: caCert.subject,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      notBefore: o.notBefore ?? notBefore,
      notAfter: o.notAfter ?? notAfter,
      signingAlgorithm: algorithm,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
        ...extensions,
      ],
    });
    return { cert: `${cert.toString('pem')}\n`, key: await privateKeyPem(keys.privateKey) };
  }

  return {
    cert: caPem,
    certBase64: Buffer.from(caPem).toString('base64'),
    issueServerCert(o = {}) {
      const names: x509.JsonGeneralName[] = [
        ...(o.ips ?? ['127.0.0.1']).map((value) => ({ type: 'ip' as const, value })),
        ...(o.dns ?? ['localhost']).map((value) => ({ type: 'dns' as const, value })),
      ];
      return issue(
        'CN=cpc-test-server',
        [
          new x509.SubjectAlternativeNameExtension(names),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        ],
        o,
      );
    },
    issueClientCert(commonName, o = {}) {
      const subject = [...(o.groups ?? []).map((g) => `O=${escapeDn(g)}`), `CN=${escapeDn(commonName)}`].join(', ');
      return issue(subject, [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])], o);
    },
  };
}

/** The SHA-256 fingerprint (hex, lower case, no colons) of a PEM certificate: compare with `clientCert.fingerprint256`. */
export function certFingerprint(pem: string): string {
  return new NodeX509Certificate(pem).fingerprint256.replaceAll(':', '').toLowerCase();
}

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  /** The token of an `Authorization: Bearer` header. */
  bearer: string | undefined;
  /** The verified client certificate, if one was presented. */
  clientCert: { subjectCN: string | undefined; fingerprint256: string } | undefined;
  /** A number per TLS connection: requests on one keep-alive connection share it. */
  connection: number;
}

export type TestHandler = (request: RecordedRequest, req: IncomingMessage, res: ServerResponse) => void;

export interface HttpsServerOptions {
  ca: TestCa;
  /** `none`: not asked; `optional`: asked, verified if given; `require`: handshake fails without one. Default `none`. */
  clientCert?: 'none' | 'optional' | 'require';
  /** Default: a fresh certificate for 127.0.0.1 / localhost from `ca`. */
  serverCert?: KeyPairPem;
  /** Default: 200 with a JSON echo of the recorded request. */
  handler?: TestHandler;
  /** Client certificates are verified against this CA bundle (PEM) instead of `ca`'s certificate. */
  clientCaPem?: string;
}

export interface TestHttpsServer {
  /** `https://127.0.0.1:<port>` */
  url: string;
  port: number;
  server: https.Server;
  /** Every request, in arrival order. */
  requests: RecordedRequest[];
  /** Number of TLS connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

function echo(request: RecordedRequest, _req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(request));
}

/** Starts an HTTPS server on 127.0.0.1, port 0. */
export async function startHttpsServer(options: HttpsServerOptions): Promise<TestHttpsServer> {
  const serverCert = options.serverCert ?? (await options.ca.issueServerCert());
  const mode = options.clientCert ?? 'none';
  const handler = options.handler ?? echo;
  const requests: RecordedRequest[] = [];
  const connectionIds = new WeakMap<object, number>();
  let connectionCount = 0;
  const server = https.createServer(
    {
      cert: serverCert.cert,
      key: serverCert.key,
      ca: options.clientCaPem ?? options.ca.cert,
      requestCert: mode !== 'none',
      rejectUnauthorized: mode === 'require',
    },
    (req, res) => {
      const socket = req.socket as TLSSocket;
      const peer = mode === 'none' ? undefined : socket.getPeerCertificate();
      const authorized = socket.authorized;
      const clientCert =
        peer !== undefined && authorized && peer.raw !== undefined
          ? {
              subjectCN: typeof peer.subject?.CN === 'string' ? peer.subject.CN : undefined,
              fingerprint256: createHash('sha256').update(peer.raw).digest('hex'),
            }
          : undefined;
      const auth = req.headers.authorization;
      const request: RecordedRequest = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        bearer: auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined,
        clientCert,
        connection: connectionIds.get(socket) ?? 0,
      };
      requests.push(request);
      handler(request, req, res);
    },
  );
  server.on('secureConnection', (socket) => {
    connectionCount += 1;
    connectionIds.set(socket, connectionCount);
  });
  server.on('tlsClientError', () => {
    // A handshake refused (e.g. no client certificate): the client sees the error; keep the server up.
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    server,
    requests,
    connections: () => connectionCount,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
