/** The data-dir backend as an {@link IssuerState}: the data dir's CAs, its trust store and its nonce journal. */
import { join } from 'node:path';
import { tenantError } from '../../../wire/tenant-cert/protocol.js';
import { checkNonce } from '../../checks.js';
import type { ServingMaterial } from '../issuer-cas.js';
import type { IssuerState, NonceBook } from '../issuer-state.js';
import { DATA_FILES, servingMaterial, type DataDir } from './data-dir.js';
import type { NonceStore } from './nonce-journal.js';
import type { TrustStore } from './trust-files.js';

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
