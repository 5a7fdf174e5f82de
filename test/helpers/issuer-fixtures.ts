/**
 * Fixtures for tenant-cert issuer tests: an in-process Issuer over a temporary data dir with a settable clock, and
 * helpers that make Tenants the way a client (honest or not) would.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTenant } from '../../src/wire/tenant-cert/documents.js';
import {
  encodeBase64,
  generateClusterKeyPair,
  toCryptoKeyPair,
  webCryptoAlgorithm,
  type KeyAlgorithm,
} from '../../src/wire/tenant-cert/keys.js';
import { signNonceRequest, signTenant } from '../../src/wire/tenant-cert/message.js';
import type { NonceRequest, TenantDocument } from '../../src/wire/tenant-cert/protocol.js';
import { openDataDir } from '../../src/issuer/state/data-dir/data-dir.js';
import { embeddedSigner } from '../../src/issuer/signer/embedded-signer.js';
import { Issuer, type IssuerOptions } from '../../src/issuer/issuer.js';
import { NonceStore } from '../../src/issuer/state/data-dir/nonce-journal.js';
import { journalBook } from '../../src/issuer/state/data-dir/data-dir-state.js';
import type { Signer } from '../../src/issuer/signer/signer.js';
import { TrustStore } from '../../src/issuer/state/data-dir/trust-files.js';
import { x509 } from '../../src/wire/tenant-cert/x509.js';

export interface Clock {
  now(): Date;
  advance(ms: number): void;
}

export function frozenClock(start = '2026-03-01T12:00:00Z'): Clock {
  let current = new Date(start).getTime();
  return { now: () => new Date(current), advance: (ms) => (current += ms) };
}

export interface IssuerFixture {
  dir: string;
  issuer: Issuer;
  clock: Clock;
  trust: TrustStore;
  nonces: NonceStore;
  clientCaPem: string;
  /** Trusts a new consumer and returns its private key. */
  consumer(id: string, algorithm?: KeyAlgorithm, groups?: string[]): Promise<KeyObject>;
  /** A nonce for a consumer made by {@link consumer}, asked for with a properly signed request. */
  nonce(id: string): Promise<string>;
  /** A nonce request for `id`, signed by its key (or `key`), timestamped now (or `at`). */
  nonceRequest(id: string, options?: { key?: KeyObject; at?: Date }): NonceRequest;
  close(): Promise<void>;
}

export async function issuerFixture(
  options: Partial<Omit<IssuerOptions, 'trust' | 'nonces' | 'signer' | 'now'>> & { signer?: Signer } = {},
): Promise<IssuerFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'cpc-issuer-'));
  const clock = frozenClock();
  const data = await openDataDir(join(dir, 'data'), 'p1', clock.now());
  const trust = new TrustStore(data.dir);
  const nonces = await NonceStore.open(data.noncesFile, clock.now(), { now: clock.now });
  const keys = new Map<string, KeyObject>();
  let sequence = 0;
  const nonceRequest = (id: string, request: { key?: KeyObject; at?: Date } = {}): NonceRequest => {
    const key = request.key ?? keys.get(id);
    if (key === undefined) {
      throw new TypeError(`no key for consumer ${id}: pass one`);
    }
    // The issuer's own clock (a test may have swapped it for the real one), a millisecond further each time: on a
    // frozen clock two requests would otherwise be the same request (ERR_TENANT_NONCE_REQUEST_REPLAYED).
    return signNonceRequest(
      key,
      { providerClusterID: 'p1', consumerClusterID: id },
      request.at ?? new Date(issuer.options.now().getTime() + sequence++),
    );
  };
  const issuer = new Issuer({
    providerClusterID: 'p1',
    groups: [],
    nonceTtlMs: 60_000,
    certLifetimeMs: 86_400_000,
    liqoCompat: false,
    ...options,
    trust,
    nonces: journalBook(nonces),
    signer: options.signer ?? embeddedSigner(data.clientCa),
    now: clock.now,
  });
  return {
    dir: data.dir,
    issuer,
    clock,
    trust,
    nonces,
    clientCaPem: data.clientCa.certificatePem,
    async consumer(id, algorithm = 'ed25519', groups = []) {
      const pair = generateClusterKeyPair(algorithm);
      const key = createPrivateKey(pair.privateKeyPem);
      await trust.trust(id, createPublicKey(key), groups, clock.now());
      keys.set(id, key);
      return key;
    },
    async nonce(id) {
      return (await issuer.issueNonce(nonceRequest(id))).nonce;
    },
    nonceRequest,
    async close() {
      await nonces.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface CsrSpec {
  name?: string;
  extensions?: InstanceType<typeof x509.Extension>[];
  attributes?: InstanceType<typeof x509.Attribute>[];
}

/** A CSR for `key` with whatever subject/extensions/attributes a (malicious) client chooses. */
export async function customCsrPem(key: KeyObject, spec: CsrSpec): Promise<Buffer> {
  const request = await x509.Pkcs10CertificateRequestGenerator.create({
    name: spec.name ?? 'CN=c1',
    keys: toCryptoKeyPair(key),
    signingAlgorithm: webCryptoAlgorithm(key),
    ...(spec.extensions === undefined ? {} : { extensions: spec.extensions }),
    ...(spec.attributes === undefined ? {} : { attributes: spec.attributes }),
  });
  return Buffer.from(request.rawData);
}

/** A Tenant around a given CSR, signed properly (so only the CSR is at fault). */
export function tenantWithCsr(
  key: KeyObject,
  consumer: string,
  nonce: string,
  csrDer: Buffer,
  provider = 'p1',
): TenantDocument {
  const pem = new x509.Pkcs10CertificateRequest(csrDer).toString('pem');
  const signature = signTenant(key, { providerClusterID: provider, consumerClusterID: consumer, nonce, csrDer });
  return {
    apiVersion: 'credentials.clusterprofile.io/v1alpha1',
    kind: 'Tenant',
    metadata: { name: consumer },
    spec: {
      clusterID: consumer,
      providerClusterID: provider,
      nonce,
      publicKey: encodeBase64(createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString()),
      csr: encodeBase64(pem),
      signature: encodeBase64(signature),
    },
  };
}

export { buildTenant };
