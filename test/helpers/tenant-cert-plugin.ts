// Helpers for the tenant-cert plugin tests: certificates for a given public key with chosen validity (signed by a
// throw-away CA), temp dirs with private key files, and Identity documents in both flavours.
import { createPrivateKey, createPublicKey, webcrypto, type KeyObject } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { x509 } from '../../src/wire/tenant-cert/x509.js';
import { generateClusterKeyPair, type KeyAlgorithm } from '../../src/wire/tenant-cert/keys.js';

const ecdsa = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface TestSigner {
  /** PEM of the CA certificate. */
  cert: string;
  /** A certificate for `publicKey` with subject CN (and O per group), signed by this CA. */
  issue(
    publicKey: KeyObject,
    options: { cn: string; groups?: string[]; notBefore: Date; notAfter: Date },
  ): Promise<string>;
}

export async function createSigner(name = 'tenant-cert-test-ca'): Promise<TestSigner> {
  const keys = (await webcrypto.subtle.generateKey(ecdsa, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${name}`,
    notBefore: new Date(Date.UTC(2000, 0, 1)),
    notAfter: new Date(Date.UTC(2099, 0, 1)),
    keys,
    signingAlgorithm: ecdsa,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  let serial = 2;
  return {
    cert: caCert.toString('pem'),
    async issue(publicKey, options) {
      const algorithm =
        publicKey.asymmetricKeyType === 'ed25519'
          ? { name: 'Ed25519' }
          : publicKey.asymmetricKeyType === 'ec'
            ? { name: 'ECDSA', namedCurve: 'P-256' }
            : { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
      const subjectKey = publicKey.toCryptoKey(algorithm as never, true, ['verify']) as unknown as webcrypto.CryptoKey;
      const subject = [...(options.groups ?? []).map((group) => ({ O: [group] })), { CN: [options.cn] }];
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: (serial++).toString(16).padStart(2, '0'),
        subject: new x509.Name(subject),
        issuer: caCert.subject,
        notBefore: options.notBefore,
        notAfter: options.notAfter,
        publicKey: subjectKey,
        signingKey: keys.privateKey,
        signingAlgorithm: ecdsa,
        extensions: [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])],
      });
      return cert.toString('pem');
    },
  };
}

export interface TestKey {
  dir: string;
  file: string;
  pem: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** A fresh temp dir holding `key.pem` (0600) of the given algorithm. */
export function createKeyFile(algorithm: KeyAlgorithm = 'ed25519', mode = 0o600): TestKey {
  const dir = mkdtempSync(join(tmpdir(), 'cpc-tenant-cert-'));
  const pair = generateClusterKeyPair(algorithm);
  const file = join(dir, 'key.pem');
  writeFileSync(file, pair.privateKeyPem, { mode });
  const privateKey = createPrivateKey(pair.privateKeyPem);
  return { dir, file, pem: pair.privateKeyPem, privateKey, publicKey: createPublicKey(privateKey) };
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');

/** An Identity in our flavour (JSON text). */
export function ourIdentity(o: {
  provider: string;
  consumer: string;
  certPem: string;
  caPem?: string;
  apiServer?: string;
}): string {
  return JSON.stringify({
    apiVersion: 'credentials.clusterprofile.io/v1alpha1',
    kind: 'Identity',
    metadata: { name: `${o.provider}-${o.consumer}` },
    spec: {
      clusterID: o.provider,
      consumerClusterID: o.consumer,
      authParams: {
        signedCRT: b64(o.certPem),
        ...(o.caPem === undefined ? {} : { ca: b64(o.caPem) }),
        ...(o.apiServer === undefined ? {} : { apiServer: o.apiServer }),
      },
      notBefore: '2026-01-01T00:00:00Z',
      notAfter: '2027-01-01T00:00:00Z',
    },
  });
}

/** An Identity as liqoctl prints it (YAML text). */
export function liqoIdentityYaml(o: {
  provider: string;
  consumer: string;
  certPem: string;
  caPem?: string;
  apiServer?: string;
  type?: string;
}): string {
  return [
    'apiVersion: authentication.liqo.io/v1beta1',
    'kind: Identity',
    'metadata:',
    '  creationTimestamp: null',
    '  labels:',
    `    liqo.io/remote-cluster-id: ${o.provider}`,
    `  name: controlplane-${o.provider}`,
    'spec:',
    '  authParams:',
    ...(o.apiServer === undefined ? [] : [`    apiServer: ${o.apiServer}`]),
    ...(o.caPem === undefined ? [] : [`    ca: ${b64(o.caPem)}`]),
    `    signedCRT: ${b64(o.certPem)}`,
    `  clusterID: ${o.provider}`,
    `  namespace: liqo-tenant-${o.consumer}`,
    `  type: ${o.type ?? 'ControlPlane'}`,
    'status: {}',
    '',
  ].join('\n');
}

/** Writes `text` to `dir/name` and returns the path. */
export function writeText(dir: string, name: string, text: string, mode = 0o600): string {
  const file = join(dir, name);
  writeFileSync(file, text, { mode });
  return file;
}
