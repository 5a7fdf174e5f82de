/**
 * Where an issuer keeps its state, behind one interface: the trust records, the nonces (issued, spent), the embedded
 * CAs. Two backends:
 * - `data-dir` (this file): one process, files in a private directory (./data-dir.ts, ./nonces.ts, ./trust.ts),
 *   guarded by a pid lock; it also remembers the signed nonce requests it answered (the replay memory);
 * - `kubernetes` (./kubernetes-state.ts): any number of replicas sharing ConfigMaps and Secrets in one namespace of
 *   the provider cluster; nonces are sealed (no write to issue one) and single use is decided by the API server's
 *   create of a spent record, never by a lock of ours.
 */
import { tenantError } from '../../wire/tenant-cert/protocol.js';
import type { CertificateAuthority } from '../certificates.js';
import { checkNonce } from '../checks.js';
import { join } from 'node:path';
import { DATA_FILES, servingMaterial, type DataDir, type ServingMaterial } from './data-dir/data-dir.js';
import type { NonceStore } from './data-dir/nonces.js';
import type { TrustStore, TrustedConsumer } from './data-dir/trust-store.js';

/** The signed nonce request a nonce answers: what its signature covers, remembered until `untilMs`. */
export interface AnsweredRequest {
  key: string;
  untilMs: number;
}

export interface NonceBook {
  /**
   * A new nonce for `consumer`, valid `ttlMs`. The data dir retires the consumer's oldest outstanding ones beyond its
   * cap and, with `request`, answers 'replayed' when that request was answered before (the replay memory, which
   * survives a restart), else records it with the nonce. The Kubernetes state keeps neither (its nonces cost no
   * storage, so a replayed request only obtains another nonce the consumer's key alone can use).
   */
  issue(
    consumer: string,
    ttlMs: number,
    now: Date,
    options: { durable: boolean; request?: AnsweredRequest },
  ): Promise<{ nonce: string; expiresAt: Date } | 'replayed'>;
  /**
   * Checks the nonce (issued, to `consumer`, unexpired, unused: the ERR_TENANT_NONCE_* codes) and spends it: it
   * succeeds for exactly one caller, across every process sharing the state, once that is durable. A nonce of another
   * consumer, or an unknown one, is left as it was.
   */
  take(nonce: string, consumer: string, now: Date): Promise<void>;
  /** The consumer's unconsumed, unexpired nonces, oldest first (Liqo Tenants name none); Kubernetes: this replica's. */
  outstanding(consumer: string, now: Date): Promise<string[]>;
}

export interface TrustSource {
  get(clusterID: string): Promise<TrustedConsumer | undefined>;
}

export interface IssuerState {
  readonly kind: 'data-dir' | 'kubernetes';
  readonly trust: TrustSource;
  readonly nonces: NonceBook;
  /** The CA of the embedded signer. */
  readonly clientCa: CertificateAuthority;
  /** The HTTPS key and certificate for these SANs (with the CA consumers trust for it). */
  servingMaterial(sans: readonly string[], now: Date): Promise<ServingMaterial>;
  /** What to trust for HTTPS and where the client CA is, for the start-up log line. */
  describe(): string;
  /** Resolves when the state can be used now (for /readyz); rejects with a coded error otherwise. */
  checkReady(signal?: AbortSignal): Promise<void>;
  /**
   * Outstanding (unconsumed, unexpired) nonces of every consumer (for a metric). Kubernetes: those this replica issued
   * and did not see spent (a replica's own figure; sum the replicas, which over-counts nonces spent at another one).
   */
  outstandingNonces(now: Date): Promise<number>;
  close(): Promise<void>;
}

/** The data-dir nonce journal as a {@link NonceBook}. */
export function journalBook(store: NonceStore): NonceBook {
  return {
    async issue(consumer, ttlMs, now, options) {
      if (
        options.request !== undefined &&
        !store.remember(options.request.key, options.request.untilMs, now.getTime())
      ) {
        return 'replayed';
      }
      return store.issue(consumer, ttlMs, now, options.durable);
    },
    async take(nonce, consumer, now) {
      checkNonce(store.get(nonce), consumer, now);
      const spent = store.consume(nonce);
      if (!spent.first) {
        throw tenantError('ERR_TENANT_NONCE_REUSED', 'the nonce was already used (a nonce is good for one Tenant)', {
          path: '$.spec.nonce',
        });
      }
      await spent.durable;
    },
    outstanding: async (consumer, now) => store.outstanding(consumer, now),
  };
}

/**
 * The data dir as an {@link IssuerState}; `close` releases what the caller opened (journal, lock). With `tls` (the
 * `--tls-cert-file` pair) HTTPS uses that pair instead of a certificate from the data dir's serving CA.
 */
export function dataDirState(
  data: DataDir,
  trust: TrustStore,
  store: NonceStore,
  lifecycle: { checkReady(): Promise<void>; close(): Promise<void> },
  tls?: { material: ServingMaterial; source: string },
): IssuerState {
  return {
    kind: 'data-dir',
    trust,
    nonces: journalBook(store),
    clientCa: data.clientCa,
    servingMaterial: async (sans, now) => tls?.material ?? servingMaterial(data, sans, now),
    describe: () =>
      `trust ${tls === undefined ? join(data.dir, DATA_FILES.servingCa) : `the CA of ${tls.source}`} for HTTPS; client CA ${join(data.dir, DATA_FILES.clientCa)}`,
    checkReady: () => lifecycle.checkReady(),
    outstandingNonces: async (now) => store.count(now.getTime()),
    close: () => lifecycle.close(),
  };
}
