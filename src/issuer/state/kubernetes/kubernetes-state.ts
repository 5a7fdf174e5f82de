/**
 * The issuer's state in the Kubernetes API of the provider cluster (`issuer serve --state kubernetes --namespace NS`),
 * shared by any number of replicas. Every object lives in NS and carries the label
 * `credentials.clusterprofile.io/issuer-state` (`ca`, `key`, `trust` or `nonce`):
 * ```text
 * Secret    clusterprofile-issuer-client-ca   kubernetes.io/tls: tls.crt, tls.key — the embedded signer's CA
 * Secret    clusterprofile-issuer-serving-ca  the CA of the replicas' HTTPS certificates (not with --tls-cert-file)
 * Secret    clusterprofile-issuer-nonce-key   key: the 32-byte HMAC key that seals nonces
 * ConfigMap issuer-trust-<consumer ID>        record.json: a trusted consumer (schema issuer-trust-record)
 * ConfigMap issuer-spent-<40 hex>             labels only: a spent nonce, until its expiry + 1 minute
 * ConfigMap issuer-nonce-<40 hex>             nonce: an issued nonce, with --liqo-compat only (see below)
 * ```
 * A handshake is one write. Issuing a nonce writes nothing: the nonce is sealed (./sealed-nonces.ts) — it carries its
 * consumer and expiry under an HMAC of the shared key, so any replica checks it, before any API call, and refuses a
 * forged, altered, foreign or expired one with the ERR_TENANT_NONCE_* codes without writing. Spending it is one create
 * of `issuer-spent-<id>` (id: from the nonce's MAC): 201, this Tenant spends it; 409 AlreadyExists, another Tenant did
 * (ERR_TENANT_NONCE_REUSED). The API server's create, not a lock of ours, makes a nonce single use across replicas:
 * - a Secret (the CAs, the key) is created by whichever replica comes first; the others get AlreadyExists and read
 *   the winner's. It is never updated. Deleting the key Secret rotates the key: the next replica to start makes a new
 *   one; nonces sealed with the old key are then ERR_TENANT_NONCE_UNKNOWN at replicas with the new one (consumers ask
 *   for a new nonce), so restart every replica after deleting it.
 * - a spent record must outlive its nonce (after that the sealed expiry refuses the nonce anyway), plus a minute for
 *   clocks of replicas that disagree. Any replica collects records past that, each deleted with a uid and
 *   resourceVersion precondition (a lost race is a 404 or 409, ignored); nonce objects of earlier versions too.
 * - signed nonce requests are not remembered: a replayed one is answered with another nonce of the same consumer.
 *   That is harmless here — only the holder of the consumer's private key can sign a Tenant over it, and it costs
 *   no storage and retires no other nonce (there is no per-consumer cap to exhaust) — and refusing it would need a
 *   write per nonce. (The data dir, which journals anyway, still refuses replays.)
 * - what a replica issued it remembers in memory, for the outstanding-nonces figure (its own: issued by it,
 *   unexpired, not seen spent by it).
 * - Liqo-shaped Tenants name no nonce: the issuer tries the consumer's outstanding nonces against the signature. So
 *   that any replica can match one, `--liqo-compat` also records each issued nonce as `issuer-nonce-<id>` (a second
 *   write per handshake, only in that mode) and lists the consumer's records when such a Tenant arrives; the records
 *   are collected like spent ones. Spending stays the create of `issuer-spent-<id>`.
 * An API server that is down or refuses makes a Tenant fail with ERR_ISSUER_STATE_UNAVAILABLE / _FORBIDDEN
 * (retryable; HTTP 503 to clients): spending is one write, so nothing is left half written.
 */
import type { BackgroundLoops } from '../../background.js';
import type { Env } from '../../../base/io.js';
import type { CertificateAuthority } from '../../certificates.js';
import { servingMaterialFromFiles } from '../../serving-files.js';
import type { IssuerSettings } from '../../settings.js';
import { servingFrom, type ServingMaterial } from '../issuer-cas.js';
import type { IssuerState } from '../issuer-state.js';
import { stateConnection, type StateConnection } from './connection.js';
import { KubernetesNonces, startCollecting } from './nonce-book.js';
import { LABEL_KIND, Paths, stateFailure } from './objects.js';
import { CLIENT_CA_SECRET, SERVING_CA_SECRET, ensureCaSecret, ensureNonceKey } from './secrets.js';
import { KubernetesTrustStore } from './trust-config-maps.js';

export interface KubernetesStateOptions {
  namespace: string;
  providerClusterID: string;
  now(): Date;
  /** PEM pair for HTTPS (a mounted Secret) instead of certificates from the serving CA Secret. */
  tls?: { certificatePem: string; keyPem: string; source: string };
  /** How often this replica collects expired nonces (default 30 s, ±50 % jitter); 0: never (tests call collect()). */
  collectEveryMs?: number;
  /** --liqo-compat: issued nonces recorded in the API, so a Liqo-shaped Tenant matches at any replica. */
  liqoCompat?: boolean;
  log?(line: string): void;
  /** Where the collection loop reports its runs (`issuer serve`: logged, counted, readiness). */
  background?: BackgroundLoops;
}

/** Opens the state in NS: the client CA (and serving CA) and the nonce key created or read, the collector started. */
export async function kubernetesState(
  conn: StateConnection,
  options: KubernetesStateOptions,
): Promise<IssuerState & { nonceBook: KubernetesNonces; trustStore: KubernetesTrustStore }> {
  const paths = new Paths(options.namespace);
  const now = options.now();
  const clientCa = await ensureCaSecret(conn, paths, CLIENT_CA_SECRET, 'client', options.providerClusterID, now);
  const servingCa =
    options.tls === undefined
      ? await ensureCaSecret(conn, paths, SERVING_CA_SECRET, 'serving', options.providerClusterID, now)
      : undefined;
  const seal = await ensureNonceKey(conn, paths, options.providerClusterID);
  const nonces = new KubernetesNonces(conn, options.namespace, seal, { recordIssued: options.liqoCompat === true });
  const trust = new KubernetesTrustStore(conn, options.namespace);
  const collectEveryMs = options.collectEveryMs ?? 30_000;
  // Its longest interval: a run is scheduled at 0.5 to 1.5 periods.
  const report =
    collectEveryMs > 0 ? options.background?.register('nonce-collection', collectEveryMs * 1.5) : undefined;
  const collector = startCollecting(nonces, collectEveryMs, options.now, options.log, report);
  const tls = options.tls;
  let serving: ServingMaterial | undefined;
  return {
    kind: 'kubernetes',
    trust,
    trustStore: trust,
    nonces,
    nonceBook: nonces,
    clientCa,
    async servingMaterial(sans, at) {
      if (tls !== undefined) return { certificatePem: tls.certificatePem, keyPem: tls.keyPem, caPem: '' };
      // Each replica holds its own certificate in memory, from the one serving CA consumers trust.
      const { fresh: _fresh, ...material } = servingFrom(servingCa as CertificateAuthority, serving ?? {}, sans, at);
      serving = material;
      return material;
    },
    describe: () =>
      `state in namespace ${options.namespace} (${conn.source}); ${tls === undefined ? `trust secret ${SERVING_CA_SECRET} tls.crt` : `certificate ${tls.source}`} for HTTPS; client CA secret ${CLIENT_CA_SECRET} tls.crt`,
    async checkReady(signal) {
      const what = 'checking the state namespace';
      const response = await conn.send(
        {
          method: 'GET',
          path: paths.configMaps(`?labelSelector=${encodeURIComponent(`${LABEL_KIND}=nonce`)}&limit=1`),
        },
        what,
        signal,
      );
      if (response.status !== 200) throw stateFailure(what, response, paths.configMaps());
    },
    outstandingNonces: (at) => nonces.count(at),
    async close() {
      await collector.stop();
      await conn.close();
    },
  };
}

/** `issuer serve --state kubernetes`: the connection, the TLS files if given, the state. */
export async function openKubernetesState(
  settings: IssuerSettings,
  providerClusterID: string,
  deps: { env: Env; cwd: string; now(): Date; log?(line: string): void; background?: BackgroundLoops },
): Promise<IssuerState> {
  let tls: KubernetesStateOptions['tls'];
  if (settings.tlsCertFile !== undefined && settings.tlsKeyFile !== undefined) {
    const files = await servingMaterialFromFiles(settings.tlsCertFile, settings.tlsKeyFile, deps.cwd, deps.now());
    tls = { certificatePem: files.certificatePem, keyPem: files.keyPem, source: settings.tlsCertFile };
  }
  const { conn, namespace } = await stateConnection(settings, deps);
  try {
    return await kubernetesState(conn, {
      namespace,
      providerClusterID,
      now: deps.now,
      liqoCompat: settings.liqoCompat,
      ...(settings.nonceCollectionMs === undefined ? {} : { collectEveryMs: settings.nonceCollectionMs }),
      ...(tls === undefined ? {} : { tls }),
      ...(deps.log === undefined ? {} : { log: deps.log }),
      ...(deps.background === undefined ? {} : { background: deps.background }),
    });
  } catch (error) {
    await conn.close();
    throw error;
  }
}
