/**
 * Where an issuer keeps its state, behind one interface: the trust records, the nonces (issued, spent), the embedded
 * CAs. Two backends:
 * - `data-dir` (./data-dir/): one process, files in a private directory (./data-dir/data-dir.ts, ./data-dir/nonce-journal.ts,
 *   ./data-dir/trust-files.ts; as this interface: ./data-dir/data-dir-state.ts),
 *   guarded by a pid lock; it also remembers the signed nonce requests it answered (the replay memory);
 * - `kubernetes` (./kubernetes/kubernetes-state.ts): any number of replicas sharing ConfigMaps and Secrets in one namespace of
 *   the provider cluster; nonces are sealed (no write to issue one) and single use is decided by the API server's
 *   create of a spent record, never by a lock of ours.
 */
import type { CertificateAuthority } from '../certificates.js';
import type { ServingMaterial } from './issuer-cas.js';
import type { TrustedConsumer } from './trust-record.js';

/** 64 random bytes, standard base64: 88 characters (both backends). */
export const NONCE_BYTES = 64;

/** What a backend knows of a nonce it issued, for {@link import('../checks.js').checkNonce}. */
export interface NonceRecord {
  consumer: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
  consumed: boolean;
}

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
