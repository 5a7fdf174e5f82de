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
import { createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { CredentialsError, isCredentialsError } from '../../../core/errors.js';
import type { Env } from '../../../core/io.js';
import { loadKubeAccess, type KubeAccess } from '../../../kube/kubeconfig.js';
import { statusMessage } from '../../../kube/status.js';
import { createKubeTransport } from '../../../kube/transport.js';
import type { KubeRequest, KubeResponse } from '../../../kube/types.js';
import { checkClusterId, isClusterId } from '../../../wire/tenant-cert/cluster-id.js';
import { tenantError } from '../../../wire/tenant-cert/protocol.js';
import { createCertificateAuthority, loadCertificateAuthority, type CertificateAuthority } from '../../certificates.js';
import { CA_LIFETIME_MS, caCommonName, servingFrom, type ServingMaterial } from '../data-dir/data-dir.js';
import { servingMaterialFromFiles } from '../../serving-files.js';
import type { IssuerSettings } from '../../settings.js';
import { NONCE_KEY_BYTES, NonceSeal } from './sealed-nonces.js';
import type { AnsweredRequest, IssuerState, NonceBook, TrustSource } from '../issuer-state.js';
import { parseTrustRecord, trustRecordText, type TrustRecord, type TrustedConsumer } from '../data-dir/trust-store.js';

export const LABEL_KIND = 'credentials.clusterprofile.io/issuer-state';
export const LABEL_CONSUMER = 'credentials.clusterprofile.io/consumer-cluster-id';
export const LABEL_NONCE_STATE = 'credentials.clusterprofile.io/nonce-state';
/** Seconds since the epoch after which the object may be collected. */
export const LABEL_EXPIRES = 'credentials.clusterprofile.io/expires';
/** The same, in minutes since the epoch (rounded up): the collector selects past minutes instead of listing everything. */
export const LABEL_EXPIRES_MINUTE = 'credentials.clusterprofile.io/expires-minute';
/** How many past minutes a collection selects; a full sweep (every tenth collection) finds anything older. */
const COLLECT_MINUTES = 30;
export const ANNOTATION_PROVIDER = 'credentials.clusterprofile.io/provider-cluster-id';
export const CLIENT_CA_SECRET = 'clusterprofile-issuer-client-ca';
export const SERVING_CA_SECRET = 'clusterprofile-issuer-serving-ca';
/** The HMAC key that seals nonces, shared by the replicas. */
export const NONCE_KEY_SECRET = 'clusterprofile-issuer-nonce-key';
/**
 * How long a spent-nonce record outlives its nonce's expiry before it may be collected: a replica whose clock is
 * behind the collector's by less than this still finds the record (a nonce it thinks unexpired cannot be spent twice).
 */
export const SPENT_GRACE_MS = 60_000;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

interface ObjectMeta {
  name?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface KubeObject {
  metadata?: ObjectMeta;
  data?: Record<string, string>;
}
interface KubeList {
  items?: KubeObject[];
  metadata?: { continue?: string };
}

/** The record that a nonce was spent: `issuer-spent-` and the nonce's id (./sealed-nonces.ts). */
export const spentObjectName = (id: string): string => `issuer-spent-${id}`;
/** With --liqo-compat, the record of an issued nonce. */
export const issuedObjectName = (id: string): string => `issuer-nonce-${id}`;
export const trustObjectName = (clusterID: string): string => `issuer-trust-${clusterID}`;

/** Talks to the API server as the issuer: one keep-alive transport, re-made when the credential changes (rotated tokens). */
export class StateConnection {
  private transport: ReturnType<typeof createKubeTransport>;
  private loadedAt = Date.now();
  private refreshing: Promise<void> | undefined;
  private credentialText: string;

  constructor(
    private access: KubeAccess,
    private readonly reload: (() => Promise<KubeAccess>) | undefined,
    private readonly timeoutMs = 10_000,
  ) {
    this.transport = this.make(access);
    this.credentialText = JSON.stringify(access.credential);
  }

  get source(): string {
    return this.access.source;
  }

  private make(access: KubeAccess): ReturnType<typeof createKubeTransport> {
    return createKubeTransport(access.endpoint, access.credential, { timeoutMs: this.timeoutMs });
  }

  /** Re-reads the kubeconfig or the pod's token once a minute (in the background): kubelet rotates the token file. */
  private maybeRefresh(): void {
    if (this.reload === undefined || this.refreshing !== undefined || Date.now() - this.loadedAt < 60_000) return;
    this.loadedAt = Date.now();
    this.refreshing = this.reload()
      .then((access) => {
        const text = JSON.stringify(access.credential);
        if (text === this.credentialText) return;
        const previous = this.transport;
        this.access = access;
        this.credentialText = text;
        this.transport = this.make(access);
        setTimeout(() => void previous.close(), this.timeoutMs).unref();
      })
      .catch(() => undefined)
      .finally(() => {
        this.refreshing = undefined;
      });
  }

  /** Sends; a transport failure (unreachable, timeout, TLS) becomes ERR_ISSUER_STATE_UNAVAILABLE. */
  async send(request: KubeRequest, what: string, signal?: AbortSignal): Promise<KubeResponse> {
    this.maybeRefresh();
    try {
      return await this.transport.send(request, signal === undefined ? {} : { signal });
    } catch (error) {
      if (isCredentialsError(error) && error.code.startsWith('ERR_KUBE_')) {
        throw new CredentialsError('ERR_ISSUER_STATE_UNAVAILABLE', `${what}: ${error.message}`, {
          path: this.access.endpoint.server,
          cause: error,
        });
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.refreshing;
    await this.transport.close();
  }
}

/** The coded error for an answer the state operation did not expect. */
export function stateFailure(what: string, response: KubeResponse, path: string): CredentialsError {
  const said = statusMessage(response.body);
  const message = `${what}: the API server answered ${response.status}${said === undefined ? '' : ` (${said})`}`;
  if (response.status === 403 && said !== undefined && /exceeded quota/i.test(said)) {
    return new CredentialsError('ERR_ISSUER_BUSY', message, {
      path,
      hint: "the namespace's ResourceQuota on ConfigMaps bounds the spent-nonce records; try again later",
    });
  }
  if (response.status === 401 || response.status === 403) {
    return new CredentialsError('ERR_ISSUER_STATE_FORBIDDEN', message, {
      path,
      hint: "grant the issuer's ServiceAccount the Role of deploy/base/issuer-state-rbac.yaml in the state namespace",
    });
  }
  return new CredentialsError('ERR_ISSUER_STATE_UNAVAILABLE', message, { path });
}

function corrupt(what: string, path: string, cause?: unknown, hint?: string): CredentialsError {
  return new CredentialsError('ERR_ISSUER_STATE_CORRUPT', what, {
    path,
    hint:
      hint ??
      'the object was not written by the issuer: restore it, or delete it (a CA Secret deleted makes a new CA nothing trusts yet)',
    ...(cause === undefined ? {} : { cause }),
  });
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const unb64 = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : Buffer.from(text, 'base64').toString('utf8');
const expiresLabel = (ms: number): string => String(Math.ceil(ms / 1000));

/** The Kubernetes API paths of NS. */
class Paths {
  constructor(readonly namespace: string) {}
  configMaps(query = ''): string {
    return `/api/v1/namespaces/${this.namespace}/configmaps${query}`;
  }
  configMap(name: string): string {
    return this.configMaps(`/${encodeURIComponent(name)}`);
  }
  secrets(): string {
    return `/api/v1/namespaces/${this.namespace}/secrets`;
  }
  secret(name: string): string {
    return `${this.secrets()}/${encodeURIComponent(name)}`;
  }
}

/** Every item of a label-selected ConfigMap list, page by page (500 a page). */
async function* listConfigMaps(
  conn: StateConnection,
  paths: Paths,
  selector: string,
  what: string,
): AsyncGenerator<KubeObject> {
  let next: string | undefined;
  do {
    const query = `?labelSelector=${encodeURIComponent(selector)}&limit=500${next === undefined ? '' : `&continue=${encodeURIComponent(next)}`}`;
    const response = await conn.send({ method: 'GET', path: paths.configMaps(query) }, what);
    if (response.status !== 200) throw stateFailure(what, response, paths.configMaps());
    const list = response.body as KubeList;
    for (const item of list.items ?? []) yield item;
    next = list.metadata?.continue === '' ? undefined : list.metadata?.continue;
  } while (next !== undefined);
}

/**
 * A CA in a Secret: read it, or create it when there is none. Two replicas starting together both try to create;
 * the API server accepts one, the other reads the winner's. Never updated: a Secret of another provider is refused.
 */
export async function ensureCaSecret(
  conn: StateConnection,
  paths: Paths,
  name: string,
  what: 'serving' | 'client',
  providerClusterID: string,
  now: Date,
): Promise<CertificateAuthority> {
  const path = `secret ${paths.namespace}/${name}`;
  return ensureSecret(conn, paths, name, providerClusterID, {
    read(secret) {
      const certificatePem = unb64(secret.data?.['tls.crt']);
      const keyPem = unb64(secret.data?.['tls.key']);
      if (certificatePem === undefined || keyPem === undefined)
        throw corrupt(`the ${path} lacks tls.crt or tls.key`, path);
      try {
        return loadCertificateAuthority(certificatePem, createPrivateKey(keyPem));
      } catch (cause) {
        throw corrupt(`the ${path} holds no usable CA: ${(cause as Error).message}`, path, cause);
      }
    },
    make() {
      const created = createCertificateAuthority(caCommonName(what, providerClusterID), now, CA_LIFETIME_MS);
      return {
        type: 'kubernetes.io/tls',
        kind: 'ca',
        data: { 'tls.crt': b64(created.certificatePem), 'tls.key': b64(created.keyPem) },
        value: () => loadCertificateAuthority(created.certificatePem, createPrivateKey(created.keyPem)),
      };
    },
  });
}

/**
 * The key that seals nonces, in the Secret {@link NONCE_KEY_SECRET} (data `key`: 32 random bytes): read it, or create
 * it when there is none — as {@link ensureCaSecret}, the API server accepts one replica's create and the others read
 * the winner's. Never updated or logged. Deleting the Secret rotates it (see docs/issuer.md).
 */
export async function ensureNonceKey(
  conn: StateConnection,
  paths: Paths,
  providerClusterID: string,
): Promise<NonceSeal> {
  const path = `secret ${paths.namespace}/${NONCE_KEY_SECRET}`;
  return ensureSecret(conn, paths, NONCE_KEY_SECRET, providerClusterID, {
    read(secret) {
      const key = Buffer.from(secret.data?.['key'] ?? '', 'base64');
      if (key.length !== NONCE_KEY_BYTES) {
        throw corrupt(
          `the ${path} holds no ${NONCE_KEY_BYTES}-byte key`,
          path,
          undefined,
          'delete it and restart every replica: the first makes a new key (nonces outstanding are then refused; consumers fetch new ones)',
        );
      }
      return new NonceSeal(key);
    },
    make() {
      const key = randomBytes(NONCE_KEY_BYTES);
      return { type: 'Opaque', kind: 'key', data: { key: key.toString('base64') }, value: () => new NonceSeal(key) };
    },
  });
}

/**
 * A Secret of the state that is created once and never updated: read it (it must name this provider), or create it
 * when there is none; when another replica's create came first (409), read the winner's.
 */
async function ensureSecret<T>(
  conn: StateConnection,
  paths: Paths,
  name: string,
  providerClusterID: string,
  how: {
    read(secret: KubeObject): T;
    make(): { type: string; kind: string; data: Record<string, string>; value(): T };
  },
): Promise<T> {
  const path = `secret ${paths.namespace}/${name}`;
  const read = (secret: KubeObject): T => {
    const owner = secret.metadata?.annotations?.[ANNOTATION_PROVIDER];
    if (owner !== providerClusterID) {
      throw new CredentialsError(
        'ERR_ISSUER_CONFIG',
        `the ${path} belongs to provider ${owner ?? '(none)'}, not ${providerClusterID}`,
        {
          path: '--namespace',
          hint: 'one namespace holds the state of one provider cluster: use another --namespace',
        },
      );
    }
    return how.read(secret);
  };
  const got = await conn.send({ method: 'GET', path: paths.secret(name) }, `reading the ${path}`);
  if (got.status === 200) return read(got.body as KubeObject);
  if (got.status !== 404) throw stateFailure(`reading the ${path}`, got, path);
  const made = how.make();
  const created = await conn.send(
    {
      method: 'POST',
      path: paths.secrets(),
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        type: made.type,
        metadata: {
          name,
          labels: { [LABEL_KIND]: made.kind },
          annotations: { [ANNOTATION_PROVIDER]: providerClusterID },
        },
        data: made.data,
      },
    },
    `creating the ${path}`,
  );
  if (created.status === 201) return made.value();
  if (created.status !== 409) throw stateFailure(`creating the ${path}`, created, path);
  // Another replica created it first: use that one.
  const winner = await conn.send({ method: 'GET', path: paths.secret(name) }, `reading the ${path}`);
  if (winner.status !== 200) throw stateFailure(`reading the ${path}`, winner, path);
  return read(winner.body as KubeObject);
}

/**
 * Trust records as ConfigMaps `issuer-trust-<consumer ID>`. A record read is reused for `maxAgeMs` (default 1 s)
 * before it is read again: a trust or untrust reaches every replica within that second (certificates already issued
 * stay valid until they expire in any case), and a handshake's two requests cost one read instead of two.
 */
export class KubernetesTrustStore implements TrustSource {
  private readonly cache = new Map<string, { version: string; consumer: TrustedConsumer; readAt: number }>();
  private readonly paths: Paths;

  constructor(
    private readonly conn: StateConnection,
    namespace: string,
    private readonly maxAgeMs = 1000,
  ) {
    this.paths = new Paths(namespace);
  }

  private where(clusterID: string): string {
    return `configmap ${this.paths.namespace}/${trustObjectName(clusterID)}`;
  }

  private parse(clusterID: string, object: KubeObject): TrustedConsumer {
    const where = this.where(clusterID);
    const text = object.data?.['record.json'];
    if (text === undefined)
      throw new CredentialsError('ERR_ISSUER_TRUST_RECORD', `the trust record ${where} has no record.json`, {
        path: where,
      });
    return parseTrustRecord(text, clusterID, where);
  }

  async get(clusterID: string): Promise<TrustedConsumer | undefined> {
    if (!isClusterId(clusterID)) return undefined;
    const readAt = Date.now();
    const fresh = this.cache.get(clusterID);
    if (fresh !== undefined && readAt - fresh.readAt < this.maxAgeMs) return fresh.consumer;
    const response = await this.conn.send(
      { method: 'GET', path: this.paths.configMap(trustObjectName(clusterID)) },
      `reading the trust record of ${clusterID}`,
    );
    if (response.status === 404) {
      this.cache.delete(clusterID);
      return undefined;
    }
    if (response.status !== 200)
      throw stateFailure(`reading the trust record of ${clusterID}`, response, this.where(clusterID));
    const object = response.body as KubeObject;
    const version = object.metadata?.resourceVersion ?? '';
    const cached = this.cache.get(clusterID);
    const consumer =
      cached !== undefined && cached.version === version ? cached.consumer : this.parse(clusterID, object);
    this.cache.set(clusterID, { version, consumer, readAt });
    return consumer;
  }

  /** Records (or replaces) a consumer's key and groups. */
  async trust(clusterID: string, publicKey: KeyObject, groups: readonly string[], now: Date): Promise<TrustRecord> {
    checkClusterId(clusterID, '--cluster-id');
    this.cache.delete(clusterID);
    const { record, text } = trustRecordText(clusterID, publicKey, groups, now);
    const object = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: trustObjectName(clusterID), labels: { [LABEL_KIND]: 'trust', [LABEL_CONSUMER]: clusterID } },
      data: { 'record.json': text },
    };
    const where = this.where(clusterID);
    const made = await this.conn.send(
      { method: 'POST', path: this.paths.configMaps(), body: object },
      `creating the trust record ${where}`,
    );
    if (made.status === 201) return record;
    if (made.status !== 409) throw stateFailure(`creating the trust record ${where}`, made, where);
    const replaced = await this.conn.send(
      { method: 'PUT', path: this.paths.configMap(trustObjectName(clusterID)), body: object },
      `replacing the trust record ${where}`,
    );
    if (replaced.status !== 200) throw stateFailure(`replacing the trust record ${where}`, replaced, where);
    return record;
  }

  /** Removes a consumer; false when it was not trusted. */
  async untrust(clusterID: string): Promise<boolean> {
    checkClusterId(clusterID, '--cluster-id');
    this.cache.delete(clusterID);
    const where = this.where(clusterID);
    const response = await this.conn.send(
      { method: 'DELETE', path: this.paths.configMap(trustObjectName(clusterID)) },
      `deleting the trust record ${where}`,
    );
    if (response.status === 404) return false;
    if (response.status !== 200 && response.status !== 202)
      throw stateFailure(`deleting the trust record ${where}`, response, where);
    return true;
  }

  async list(): Promise<TrustedConsumer[]> {
    const consumers: TrustedConsumer[] = [];
    for await (const object of listConfigMaps(
      this.conn,
      this.paths,
      `${LABEL_KIND}=trust`,
      'listing the trust records',
    )) {
      const id = object.metadata?.labels?.[LABEL_CONSUMER];
      if (id !== undefined && isClusterId(id)) consumers.push(this.parse(id, object));
    }
    return consumers.sort((a, b) => a.clusterID.localeCompare(b.clusterID));
  }
}

export interface KubernetesNonceOptions {
  random?: (size: number) => Buffer;
  /** Issued nonces this replica remembers (for the metric and Liqo-shaped Tenants); beyond, the oldest are forgotten. */
  maxRemembered?: number;
  /** Records each issued nonce in the API too, so a Liqo-shaped Tenant (no nonce named) matches at any replica. */
  recordIssued?: boolean;
}

/**
 * Nonces sealed with the state's key (./sealed-nonces.ts), spent by creating `issuer-spent-<id>`: see the module
 * comment. Issuing writes nothing; this replica remembers in memory what it issued, for
 * {@link KubernetesNonces.count} and {@link KubernetesNonces.outstanding} only — single use never depends on it.
 */
export class KubernetesNonces implements NonceBook {
  private readonly paths: Paths;
  /** Nonces issued by this replica and not spent by it, by id, in issue order (so about in expiry order). */
  private readonly issued = new Map<string, { nonce: string; consumer: string; expiresAt: number }>();
  private readonly random: (size: number) => Buffer;
  private readonly maxRemembered: number;
  private readonly recordIssued: boolean;

  constructor(
    private readonly conn: StateConnection,
    namespace: string,
    private readonly seal: NonceSeal,
    options: KubernetesNonceOptions = {},
  ) {
    this.paths = new Paths(namespace);
    this.random = options.random ?? randomBytes;
    this.maxRemembered = options.maxRemembered ?? 100_000;
    this.recordIssued = options.recordIssued ?? false;
  }

  /** Drops remembered nonces that expired (from the oldest, until a live one) and the oldest beyond the bound. */
  private forget(nowMs: number): void {
    for (const [id, entry] of this.issued) {
      if (entry.expiresAt > nowMs && this.issued.size <= this.maxRemembered) break;
      this.issued.delete(id);
    }
  }

  /**
   * A sealed nonce: no API call. `request` is not remembered (see the module comment: a replayed nonce request is
   * answered, which is harmless here), so this never answers 'replayed'.
   */
  async issue(
    consumer: string,
    ttlMs: number,
    now: Date,
    _options: { durable: boolean; request?: AnsweredRequest },
  ): Promise<{ nonce: string; expiresAt: Date }> {
    const expiresAt = now.getTime() + ttlMs;
    const { nonce, id } = this.seal.seal(consumer, expiresAt, this.random);
    if (this.recordIssued) await this.record(nonce, id, consumer, expiresAt);
    this.issued.set(id, { nonce, consumer, expiresAt });
    this.forget(now.getTime());
    return { nonce, expiresAt: new Date(expiresAt) };
  }

  /**
   * Checks the seal (MAC, consumer, expiry: no API call, nothing written when it fails), then spends the nonce with
   * one create of `issuer-spent-<id>`: 201 spends it here, 409 AlreadyExists means another Tenant did.
   */
  async take(nonce: string, consumer: string, now: Date): Promise<void> {
    const { id, expiresAt } = this.seal.open(nonce, consumer, now);
    const name = spentObjectName(id);
    const what = `spending a nonce of ${consumer}`;
    const made = await this.createNonceObject(name, consumer, 'spent', expiresAt, undefined, what);
    if (made.status === 201) {
      this.issued.delete(id);
      return;
    }
    if (made.status === 409) {
      this.issued.delete(id);
      throw tenantError('ERR_TENANT_NONCE_REUSED', 'the nonce was already used (a nonce is good for one Tenant)', {
        path: '$.spec.nonce',
        hint: 'ask for a new nonce',
      });
    }
    throw stateFailure(what, made, `configmap ${this.paths.namespace}/${name}`);
  }

  /** `issuer-nonce-<id>`: the issued nonce, for the other replicas (--liqo-compat). */
  private async record(nonce: string, id: string, consumer: string, expiresAt: number): Promise<void> {
    const what = `recording a nonce of ${consumer}`;
    const made = await this.createNonceObject(issuedObjectName(id), consumer, 'issued', expiresAt, { nonce }, what);
    if (made.status !== 201)
      throw stateFailure(what, made, `configmap ${this.paths.namespace}/${issuedObjectName(id)}`);
  }

  /** Creates a nonce object, collectable SPENT_GRACE_MS after the nonce's expiry; the API server's answer as it is. */
  private createNonceObject(
    name: string,
    consumer: string,
    state: 'spent' | 'issued',
    expiresAt: number,
    data: Record<string, string> | undefined,
    what: string,
  ): Promise<KubeResponse> {
    const keepUntil = expiresAt + SPENT_GRACE_MS;
    const labels = {
      [LABEL_KIND]: 'nonce',
      [LABEL_CONSUMER]: consumer,
      [LABEL_NONCE_STATE]: state,
      [LABEL_EXPIRES]: expiresLabel(keepUntil),
      [LABEL_EXPIRES_MINUTE]: String(Math.ceil(keepUntil / 60_000)),
    };
    return this.conn.send(
      {
        method: 'POST',
        path: this.paths.configMaps(),
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name, labels },
          ...(data === undefined ? {} : { data }),
        },
      },
      what,
    );
  }

  /**
   * The consumer's unexpired nonces, oldest first, for Liqo-shaped Tenants: those this replica issued and did not see
   * spent, and with `recordIssued` those any replica recorded (each checked by its seal: a record that does not open
   * for this consumer is ignored). A spent one may be among them: spending it again is ERR_TENANT_NONCE_REUSED.
   */
  async outstanding(consumer: string, now: Date): Promise<string[]> {
    const nowMs = now.getTime();
    this.forget(nowMs);
    const found = new Map<string, number>();
    for (const entry of this.issued.values()) {
      if (entry.consumer === consumer && entry.expiresAt > nowMs) found.set(entry.nonce, entry.expiresAt);
    }
    if (this.recordIssued) {
      const selector = `${LABEL_KIND}=nonce,${LABEL_NONCE_STATE}=issued,${LABEL_CONSUMER}=${consumer}`;
      for await (const object of listConfigMaps(this.conn, this.paths, selector, `listing the nonces of ${consumer}`)) {
        const nonce = object.data?.['nonce'];
        if (nonce === undefined || found.has(nonce)) continue;
        try {
          found.set(nonce, this.seal.open(nonce, consumer, now).expiresAt);
        } catch (error) {
          if (!isCredentialsError(error)) throw error;
        }
      }
    }
    return [...found].sort((a, b) => a[1] - b[1]).map(([nonce]) => nonce);
  }

  /** Unexpired nonces this replica issued and did not see spent (a replica's own figure: see the module comment). */
  async count(now: Date): Promise<number> {
    const nowMs = now.getTime();
    this.forget(nowMs);
    let count = 0;
    for (const entry of this.issued.values()) if (entry.expiresAt > nowMs) count += 1;
    return count;
  }

  /**
   * Deletes the spent-nonce records past their `expires` label (and nonce objects an earlier version left); any
   * replica may run it at any time. Each delete is conditioned on the uid and resourceVersion listed, so a lost race
   * (404, 409) changes nothing. It lists only objects whose `expires-minute` is one of the last 30 minutes (live
   * records are not sent over); `sweep` lists every one (what a replica that was down longer left behind). Returns
   * how many this call deleted.
   */
  async collect(now: Date, options: { sweep?: boolean } = {}): Promise<number> {
    const nowSeconds = now.getTime() / 1000;
    const minute = Math.floor(now.getTime() / 60_000);
    const minutes = Array.from({ length: COLLECT_MINUTES }, (_, back) => minute - back).join(',');
    const selector =
      options.sweep === true ? `${LABEL_KIND}=nonce` : `${LABEL_KIND}=nonce,${LABEL_EXPIRES_MINUTE} in (${minutes})`;
    const expired: ObjectMeta[] = [];
    for await (const object of listConfigMaps(this.conn, this.paths, selector, 'listing nonces to collect')) {
      const until = Number(object.metadata?.labels?.[LABEL_EXPIRES]);
      if (object.metadata !== undefined && Number.isFinite(until) && until < nowSeconds) expired.push(object.metadata);
    }
    let deleted = 0;
    for (let index = 0; index < expired.length; index += 8) {
      const answers = await Promise.all(
        expired.slice(index, index + 8).map((meta) =>
          this.conn.send(
            {
              method: 'DELETE',
              path: this.paths.configMap(meta.name ?? ''),
              body: {
                apiVersion: 'v1',
                kind: 'DeleteOptions',
                preconditions: { uid: meta.uid, resourceVersion: meta.resourceVersion },
              },
            },
            'collecting an expired nonce',
          ),
        ),
      );
      for (const answer of answers) {
        if (answer.status === 200 || answer.status === 202) deleted += 1;
        else if (answer.status !== 404 && answer.status !== 409)
          throw stateFailure('collecting an expired nonce', answer, this.paths.configMaps());
      }
    }
    return deleted;
  }
}

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
  const every = options.collectEveryMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  let collecting: Promise<unknown> | undefined;
  let closed = false;
  let runs = 0;
  const schedule = (): void => {
    if (every <= 0 || closed) return;
    timer = setTimeout(
      () => {
        collecting = nonces
          .collect(options.now(), { sweep: runs++ % 10 === 0 })
          .catch((error: unknown) => options.log?.(`collecting expired nonces failed: ${(error as Error).message}`))
          .finally(schedule);
      },
      every * (0.5 + Math.random()),
    );
    timer.unref();
  };
  schedule();
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
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await collecting;
      await conn.close();
    },
  };
}

/** The connection for `--state kubernetes` from the flags: kubectl's order (in a pod: its ServiceAccount). */
export async function stateConnection(
  settings: IssuerSettings,
  deps: { env: Env; cwd: string },
): Promise<{ conn: StateConnection; namespace: string }> {
  const load = () =>
    loadKubeAccess(
      {
        kubeconfig: settings.kubeconfig,
        context: settings.kubeContext,
        flag: '--kubeconfig',
        what: "the issuer state's kubeconfig",
      },
      { env: deps.env, cwd: deps.cwd },
    );
  const access = await load();
  const namespace = settings.namespace ?? access.namespace;
  if (namespace === undefined || namespace === '') {
    throw new CredentialsError(
      'ERR_USAGE',
      '--state kubernetes needs --namespace (the kubeconfig context names none)',
      { path: '--namespace' },
    );
  }
  if (!DNS_LABEL.test(namespace) || namespace.length > 63) {
    throw new CredentialsError(
      'ERR_USAGE',
      `--namespace ${JSON.stringify(namespace)} is not a namespace name (a DNS label)`,
      { path: '--namespace' },
    );
  }
  return { conn: new StateConnection(access, load), namespace };
}

/** `issuer serve --state kubernetes`: the connection, the TLS files if given, the state. */
export async function openKubernetesState(
  settings: IssuerSettings,
  providerClusterID: string,
  deps: { env: Env; cwd: string; now(): Date; log?(line: string): void },
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
      ...(tls === undefined ? {} : { tls }),
      ...(deps.log === undefined ? {} : { log: deps.log }),
    });
  } catch (error) {
    await conn.close();
    throw error;
  }
}
