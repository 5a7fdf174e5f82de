/**
 * The certificates a test control plane needs, made fresh for every run: a serving CA (kube-apiserver's serving
 * certificate, IP SAN 127.0.0.1), a client CA (what `--client-ca-file` trusts and what kube-controller-manager signs
 * `kubernetes.io/kube-apiserver-client` CSRs with), client certificates (CN = user, O = groups) and the
 * service-account signing key. ECDSA P-256 for certificates (fast), RSA 2048 for the service-account key (RS256,
 * what every Kubernetes client expects of service-account tokens).
 *
 * A CA can also be loaded back from its PEM files ({@link loadCa}): the e2e global setup writes the client CA to
 * disk, and test files (other processes) issue their own client certificates from it.
 *
 * @example
 * const clientCa = await createCa('e2e-client-ca');
 * const alice = await clientCa.issueClientCert('alice', { groups: ['devs'] });
 */
import { generateKeyPairSync, webcrypto } from 'node:crypto';
// @peculiar/x509 configured once for the whole project (crypto provider, the Reflect shim it needs).
import { x509 } from '../../src/wire/tenant-cert/x509.js';

type CryptoKeyPair = webcrypto.CryptoKeyPair;
type CryptoKey = webcrypto.CryptoKey;

const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** A certificate and its private key (PKCS#8), both PEM. */
export interface CertKeyPem {
  cert: string;
  key: string;
}

export interface IssueOptions {
  notBefore?: Date;
  notAfter?: Date;
}

export interface Ca extends CertKeyPem {
  /** A serving certificate with IP SANs (default 127.0.0.1) and DNS SANs (default localhost). */
  issueServerCert(
    options?: IssueOptions & { ips?: string[]; dns?: string[]; commonName?: string },
  ): Promise<CertKeyPem>;
  /** A client certificate as the API server reads it: CN = user name, one O per group. */
  issueClientCert(user: string, options?: IssueOptions & { groups?: string[] }): Promise<CertKeyPem>;
}

function pem(der: ArrayBuffer, label: string): string {
  const lines =
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

function escapeDn(value: string): string {
  return value.replace(/([,+"\\<>;=#])/g, '\\$1');
}

async function newKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function keyPem(key: CryptoKey): Promise<string> {
  return pem(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

function issuerFor(caCert: x509.X509Certificate, caKeys: CryptoKeyPair, certPem: string, caKeyPem: string): Ca {
  async function issue(subject: string, extensions: x509.Extension[], o: IssueOptions): Promise<CertKeyPem> {
    const keys = await newKeys();
    const cert = await x509.X509CertificateGenerator.create({
      subject,
      issuer: caCert.subject,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
        .toString('hex')
        .replace(/^[89a-f]/, '1'),
      notBefore: o.notBefore ?? new Date(Date.now() - 60_000),
      notAfter: o.notAfter ?? caCert.notAfter,
      signingAlgorithm: algorithm,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
        ...extensions,
      ],
    });
    return { cert: `${cert.toString('pem')}\n`, key: await keyPem(keys.privateKey) };
  }
  return {
    cert: certPem,
    key: caKeyPem,
    issueServerCert(o = {}) {
      const names: x509.JsonGeneralName[] = [
        ...(o.ips ?? ['127.0.0.1']).map((value) => ({ type: 'ip' as const, value })),
        ...(o.dns ?? ['localhost']).map((value) => ({ type: 'dns' as const, value })),
      ];
      return issue(
        `CN=${escapeDn(o.commonName ?? 'e2e-server')}`,
        [
          new x509.SubjectAlternativeNameExtension(names),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        ],
        o,
      );
    },
    issueClientCert(user, o = {}) {
      const subject = [...(o.groups ?? []).map((g) => `O=${escapeDn(g)}`), `CN=${escapeDn(user)}`].join(', ');
      return issue(subject, [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])], o);
    },
  };
}

/** A fresh self-signed CA, valid from a minute ago for a day unless told otherwise. */
export async function createCa(name: string, options: IssueOptions = {}): Promise<Ca> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${escapeDn(name)}`,
    keys,
    notBefore: options.notBefore ?? new Date(Date.now() - 60_000),
    notAfter: options.notAfter ?? new Date(Date.now() + 86_400_000),
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return issuerFor(cert, keys, `${cert.toString('pem')}\n`, await keyPem(keys.privateKey));
}

/** A CA from its PEM certificate and PKCS#8 P-256 private key (as {@link createCa} writes them). */
export async function loadCa(pair: CertKeyPem): Promise<Ca> {
  const cert = new x509.X509Certificate(pair.cert);
  const der = x509.PemConverter.decodeFirst(pair.key);
  const privateKey = await webcrypto.subtle.importKey('pkcs8', der, algorithm, true, ['sign']);
  const publicKey = await cert.publicKey.export(algorithm, ['verify']);
  return issuerFor(cert, { privateKey, publicKey }, pair.cert, pair.key);
}

/** An RSA 2048 key pair for `--service-account-signing-key-file` / `--service-account-key-file`. */
export function createServiceAccountKey(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** A PKCS#10 certificate signing request (CN = user, one O per group) and its fresh P-256 key, both PEM. */
export async function createCsr(user: string, groups: string[] = []): Promise<{ csr: string; key: string }> {
  const keys = await newKeys();
  const request = await x509.Pkcs10CertificateRequestGenerator.create({
    name: [...groups.map((g) => `O=${escapeDn(g)}`), `CN=${escapeDn(user)}`].join(', '),
    keys,
    signingAlgorithm: algorithm,
  });
  return { csr: `${request.toString('pem')}\n`, key: await keyPem(keys.privateKey) };
}
