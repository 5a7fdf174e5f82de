/**
 * The issuer's state in the Kubernetes API of the provider cluster (`issuer serve --state kubernetes --namespace NS`),
 * shared by any number of replicas. Every object lives in NS and carries the label
 * `credentials.clusterprofile.io/issuer-state` (`ca`, `trust` or `nonce`):
 * ```text
 * Secret    clusterprofile-issuer-client-ca   kubernetes.io/tls: tls.crt, tls.key — the embedded signer's CA
 * Secret    clusterprofile-issuer-serving-ca  the CA of the replicas' HTTPS certificates (not with --tls-cert-file)
 * ConfigMap issuer-trust-<consumer ID>        record.json: a trusted consumer (schema issuer-trust-record)
 * ConfigMap issuer-nonce-<40 hex>             nonce, consumer, expiresAt: a nonce and the signed request it answered
 * ```
 * No lock of ours decides anything; the API server's optimistic concurrency does:
 * - a CA Secret is created by whichever replica comes first; the others get AlreadyExists and read the winner's. It
 *   is never updated.
 * - a nonce's object name is derived from the signed nonce request it answers (the first 20 of the nonce's 64 bytes
 *   are a hash of what the request's signature covers, the other 44 random), so creating it is also the replay
 *   memory: the same request again is AlreadyExists, on any replica and after any restart.
 * - a nonce is spent by one JSON patch that tests the nonce, the consumer and the label `nonce-state: outstanding`
 *   and replaces the label with `spent`; the API server evaluates the tests against the current object and writes
 *   with a compare-and-swap, so exactly one Tenant spends it. A spent nonce stays (a replay is told it was used)
 *   until it and its request leave their windows.
 * - any replica collects expired nonce objects, each deleted with a uid and resourceVersion precondition (a lost
 *   race is a 404 or 409, ignored).
 * An API server that is down or refuses makes the call fail with ERR_ISSUER_STATE_UNAVAILABLE / _FORBIDDEN
 * (retryable; HTTP 503 to clients): every step above is one write, so nothing is left half written.
 */
import { createHash, createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { parseDocument } from '../../../core/document.js';
import { CredentialsError, isCredentialsError } from '../../../core/errors.js';
import type { Env } from '../../../core/io.js';
import { loadKubeAccess, type KubeAccess } from '../../../kube/kubeconfig.js';
import { statusMessage } from '../../../kube/status.js';
import { createKubeTransport } from '../../../kube/transport.js';
import type { KubeRequest, KubeResponse } from '../../../kube/types.js';
import { assertDocument } from '../../../schemas/index.js';
import { checkClusterId, isClusterId } from '../wire/cluster-id.js';
import { parsePublicKey, publicKeyPem } from '../wire/keys.js';
import { tenantError } from '../wire/protocol.js';
import { createCertificateAuthority, loadCertificateAuthority, type CertificateAuthority } from './certificates.js';
import { checkNonce } from './checks.js';
import { CA_LIFETIME_MS, caCommonName, servingFrom, type ServingMaterial } from './data-dir.js';
import { NONCE_BYTES } from './nonces.js';
import { servingMaterialFromFiles } from './serving-files.js';
import type { IssuerSettings } from './settings.js';
import type { IssuerState, NonceBook, TrustSource } from './state.js';
import type { TrustRecord, TrustedConsumer } from './trust.js';

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
const NAME_BYTES = 20;
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

export const nonceObjectName = (prefix: Buffer): string => `issuer-nonce-${prefix.subarray(0, NAME_BYTES).toString('hex')}`;
export const trustObjectName = (clusterID: string): string => `issuer-trust-${clusterID}`;

/** The object a nonce lives in, or undefined for a string that is no nonce of ours (64 bytes, standard base64). */
export function nonceObjectFor(nonce: string): string | undefined {
  if (!/^[A-Za-z0-9+/]{86}==$/.test(nonce)) return undefined;
  return nonceObjectName(Buffer.from(nonce, 'base64'));
}

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
        throw new CredentialsError('ERR_ISSUER_STATE_UNAVAILABLE', `${what}: ${error.message}`, { path: this.access.endpoint.server, cause: error });
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
    return new CredentialsError('ERR_ISSUER_BUSY', message, { path, hint: 'the namespace\'s ResourceQuota bounds the outstanding nonces; try again later' });
  }
  if (response.status === 401 || response.status === 403) {
    return new CredentialsError('ERR_ISSUER_STATE_FORBIDDEN', message, {
      path,
      hint: 'grant the issuer\'s ServiceAccount the Role of deploy/base/issuer-state-rbac.yaml in the state namespace',
    });
  }
  return new CredentialsError('ERR_ISSUER_STATE_UNAVAILABLE', message, { path });
}

function corrupt(what: string, path: string, cause?: unknown): CredentialsError {
  return new CredentialsError('ERR_ISSUER_STATE_CORRUPT', what, {
    path,
    hint: 'the object was not written by the issuer: restore it, or delete it (a CA Secret deleted makes a new CA nothing trusts yet)',
    ...(cause === undefined ? {} : { cause }),
  });
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const unb64 = (text: string | undefined): string | undefined => (text === undefined ? undefined : Buffer.from(text, 'base64').toString('utf8'));
const expiresLabel = (ms: number): string => String(Math.ceil(ms / 1000));
const escapePointer = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

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
async function* listConfigMaps(conn: StateConnection, paths: Paths, selector: string, what: string): AsyncGenerator<KubeObject> {
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
  const read = (secret: KubeObject): CertificateAuthority => {
    const owner = secret.metadata?.annotations?.[ANNOTATION_PROVIDER];
    if (owner !== providerClusterID) {
      throw new CredentialsError('ERR_ISSUER_CONFIG', `the ${path} belongs to provider ${owner ?? '(none)'}, not ${providerClusterID}`, {
        path: '--namespace',
        hint: 'one namespace holds the state of one provider cluster: use another --namespace',
      });
    }
    const certificatePem = unb64(secret.data?.['tls.crt']);
    const keyPem = unb64(secret.data?.['tls.key']);
    if (certificatePem === undefined || keyPem === undefined) throw corrupt(`the ${path} lacks tls.crt or tls.key`, path);
    try {
      return loadCertificateAuthority(certificatePem, createPrivateKey(keyPem));
    } catch (cause) {
      throw corrupt(`the ${path} holds no usable CA: ${(cause as Error).message}`, path, cause);
    }
  };
  const got = await conn.send({ method: 'GET', path: paths.secret(name) }, `reading the ${path}`);
  if (got.status === 200) return read(got.body as KubeObject);
  if (got.status !== 404) throw stateFailure(`reading the ${path}`, got, path);
  const created = createCertificateAuthority(caCommonName(what, providerClusterID), now, CA_LIFETIME_MS);
  const made = await conn.send(
    {
      method: 'POST',
      path: paths.secrets(),
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: { name, labels: { [LABEL_KIND]: 'ca' }, annotations: { [ANNOTATION_PROVIDER]: providerClusterID } },
        data: { 'tls.crt': b64(created.certificatePem), 'tls.key': b64(created.keyPem) },
      },
    },
    `creating the ${path}`,
  );
  if (made.status === 201) return loadCertificateAuthority(created.certificatePem, createPrivateKey(created.keyPem));
  if (made.status !== 409) throw stateFailure(`creating the ${path}`, made, path);
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
    if (text === undefined) throw new CredentialsError('ERR_ISSUER_TRUST_RECORD', `the trust record ${where} has no record.json`, { path: where });
    const document = parseDocument(text, { source: where, code: 'ERR_ISSUER_TRUST_RECORD', format: 'json', message: `the trust record ${where} is not JSON` });
    const record = assertDocument<TrustRecord>('issuer-trust-record', document, { code: 'ERR_ISSUER_TRUST_RECORD', what: `the trust record ${where}` });
    if (record.clusterID !== clusterID) {
      throw new CredentialsError('ERR_ISSUER_TRUST_RECORD', `the trust record ${where} names ${record.clusterID}`, { path: where });
    }
    let publicKey: KeyObject;
    try {
      publicKey = parsePublicKey(record.publicKey, where);
    } catch (cause) {
      throw new CredentialsError('ERR_ISSUER_TRUST_RECORD', `the trust record ${where} holds no usable public key: ${(cause as Error).message}`, { path: where, cause });
    }
    return { clusterID, publicKey, groups: record.groups, addedAt: record.addedAt };
  }

  async get(clusterID: string): Promise<TrustedConsumer | undefined> {
    if (!isClusterId(clusterID)) return undefined;
    const readAt = Date.now();
    const fresh = this.cache.get(clusterID);
    if (fresh !== undefined && readAt - fresh.readAt < this.maxAgeMs) return fresh.consumer;
    const response = await this.conn.send({ method: 'GET', path: this.paths.configMap(trustObjectName(clusterID)) }, `reading the trust record of ${clusterID}`);
    if (response.status === 404) {
      this.cache.delete(clusterID);
      return undefined;
    }
    if (response.status !== 200) throw stateFailure(`reading the trust record of ${clusterID}`, response, this.where(clusterID));
    const object = response.body as KubeObject;
    const version = object.metadata?.resourceVersion ?? '';
    const cached = this.cache.get(clusterID);
    const consumer = cached !== undefined && cached.version === version ? cached.consumer : this.parse(clusterID, object);
    this.cache.set(clusterID, { version, consumer, readAt });
    return consumer;
  }

  /** Records (or replaces) a consumer's key and groups. */
  async trust(clusterID: string, publicKey: KeyObject, groups: readonly string[], now: Date): Promise<TrustRecord> {
    checkClusterId(clusterID, '--cluster-id');
    this.cache.delete(clusterID);
    const record: TrustRecord = { clusterID, publicKey: publicKeyPem(publicKey), groups: [...groups], addedAt: now.toISOString() };
    const object = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: trustObjectName(clusterID), labels: { [LABEL_KIND]: 'trust', [LABEL_CONSUMER]: clusterID } },
      data: { 'record.json': `${JSON.stringify(record, null, 2)}\n` },
    };
    const where = this.where(clusterID);
    const made = await this.conn.send({ method: 'POST', path: this.paths.configMaps(), body: object }, `creating the trust record ${where}`);
    if (made.status === 201) return record;
    if (made.status !== 409) throw stateFailure(`creating the trust record ${where}`, made, where);
    const replaced = await this.conn.send({ method: 'PUT', path: this.paths.configMap(trustObjectName(clusterID)), body: object }, `replacing the trust record ${where}`);
    if (replaced.status !== 200) throw stateFailure(`replacing the trust record ${where}`, replaced, where);
    return record;
  }

  /** Removes a consumer; false when it was not trusted. */
  async untrust(clusterID: string): Promise<boolean> {
    checkClusterId(clusterID, '--cluster-id');
    this.cache.delete(clusterID);
    const where = this.where(clusterID);
    const response = await this.conn.send({ method: 'DELETE', path: this.paths.configMap(trustObjectName(clusterID)) }, `deleting the trust record ${where}`);
    if (response.status === 404) return false;
    if (response.status !== 200 && response.status !== 202) throw stateFailure(`deleting the trust record ${where}`, response, where);
    return true;
  }

  async list(): Promise<TrustedConsumer[]> {
    const consumers: TrustedConsumer[] = [];
    for await (const object of listConfigMaps(this.conn, this.paths, `${LABEL_KIND}=trust`, 'listing the trust records')) {
      const id = object.metadata?.labels?.[LABEL_CONSUMER];
      if (id !== undefined && isClusterId(id)) consumers.push(this.parse(id, object));
    }
    return consumers.sort((a, b) => a.clusterID.localeCompare(b.clusterID));
  }
}

interface Issued {
  name: string;
  expiresAt: number;
}

export interface KubernetesNonceOptions {
  /** Outstanding nonces a consumer keeps per replica; issuing one more retires that replica's oldest (default 16). */
  maxPerConsumer?: number;
  random?: (size: number) => Buffer;
}

/** Nonces as ConfigMaps `issuer-nonce-<40 hex>`: see the module comment. */
export class KubernetesNonces implements NonceBook {
  private readonly paths: Paths;
  /** Per consumer, the nonces this replica issued, oldest first (the per-consumer cap, without a list per nonce). */
  private readonly mine = new Map<string, Issued[]>();
  private readonly maxPerConsumer: number;
  private readonly random: (size: number) => Buffer;

  constructor(
    private readonly conn: StateConnection,
    namespace: string,
    options: KubernetesNonceOptions = {},
  ) {
    this.paths = new Paths(namespace);
    this.maxPerConsumer = options.maxPerConsumer ?? 16;
    this.random = options.random ?? randomBytes;
  }

  async issue(consumer: string, ttlMs: number, now: Date, options: { durable: boolean; request?: { key: string; untilMs: number } }): Promise<{ nonce: string; expiresAt: Date } | 'replayed'> {
    const nowMs = now.getTime();
    const expiresAt = nowMs + ttlMs;
    const bytes = this.random(NONCE_BYTES);
    if (options.request !== undefined) {
      createHash('sha256').update(`clusterprofile nonce request\0${options.request.key}`).digest().copy(bytes, 0, 0, NAME_BYTES);
    }
    const nonce = bytes.toString('base64');
    const name = nonceObjectName(bytes);
    const keepUntil = Math.max(expiresAt, options.request?.untilMs ?? 0);
    const made = await this.conn.send(
      {
        method: 'POST',
        path: this.paths.configMaps(),
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: {
            name,
            labels: { [LABEL_KIND]: 'nonce', [LABEL_CONSUMER]: consumer, [LABEL_NONCE_STATE]: 'outstanding', [LABEL_EXPIRES]: expiresLabel(keepUntil), [LABEL_EXPIRES_MINUTE]: String(Math.ceil(keepUntil / 60_000)) },
          },
          data: { nonce, consumer, expiresAt: new Date(expiresAt).toISOString() },
        },
      },
      `creating a nonce for ${consumer}`,
    );
    if (made.status === 409 && options.request !== undefined) return 'replayed';
    if (made.status !== 201) throw stateFailure(`creating a nonce for ${consumer}`, made, `configmap ${this.paths.namespace}/${name}`);
    await this.retireBeyondCap(consumer, { name, expiresAt }, nowMs);
    return { nonce, expiresAt: new Date(expiresAt) };
  }

  private async retireBeyondCap(consumer: string, issued: Issued, nowMs: number): Promise<void> {
    const list = (this.mine.get(consumer) ?? []).filter((entry) => entry.expiresAt > nowMs);
    list.push(issued);
    const retire = list.splice(0, Math.max(0, list.length - this.maxPerConsumer));
    if (list.length === 0) this.mine.delete(consumer);
    else this.mine.set(consumer, list);
    for (const old of retire) {
      // Spent already (its Tenant came) or collected: the patch fails, which is what we want.
      await this.spend(old.name, [{ op: 'test', path: `/metadata/labels/${escapePointer(LABEL_NONCE_STATE)}`, value: 'outstanding' }], 'retiring a nonce').catch(() => undefined);
    }
  }

  /** The JSON patch that spends a nonce if `tests` hold; the answer as the API server gave it. */
  private spend(name: string, tests: Array<{ op: 'test'; path: string; value: string }>, what: string): Promise<KubeResponse> {
    return this.conn.send(
      {
        method: 'PATCH',
        path: this.paths.configMap(name),
        contentType: 'application/json-patch+json',
        body: [...tests, { op: 'replace', path: `/metadata/labels/${escapePointer(LABEL_NONCE_STATE)}`, value: 'spent' }],
      },
      what,
    );
  }

  private record(object: KubeObject): { consumer: string; expiresAt: number; consumed: boolean } {
    const where = `configmap ${this.paths.namespace}/${object.metadata?.name ?? '?'}`;
    const consumer = object.data?.['consumer'];
    const expiresAt = Date.parse(object.data?.['expiresAt'] ?? '');
    if (consumer === undefined || Number.isNaN(expiresAt)) throw corrupt(`the nonce ${where} lacks its consumer or expiresAt`, where);
    return { consumer, expiresAt, consumed: object.metadata?.labels?.[LABEL_NONCE_STATE] !== 'outstanding' };
  }

  async take(nonce: string, consumer: string, now: Date): Promise<void> {
    const name = nonceObjectFor(nonce);
    if (name === undefined) {
      checkNonce(undefined, consumer, now);
      return;
    }
    const what = `spending a nonce of ${consumer}`;
    const spent = await this.spend(
      name,
      [
        { op: 'test', path: '/data/nonce', value: nonce },
        { op: 'test', path: '/data/consumer', value: consumer },
        { op: 'test', path: `/metadata/labels/${escapePointer(LABEL_NONCE_STATE)}`, value: 'outstanding' },
      ],
      what,
    );
    if (spent.status === 200) {
      // Spent now; an expired one is refused all the same (spending it cost nothing: it was dead).
      const record = this.record(spent.body as KubeObject);
      checkNonce({ ...record, consumed: false }, consumer, now);
      return;
    }
    if (spent.status === 404) {
      checkNonce(undefined, consumer, now);
      return;
    }
    if (spent.status === 401 || spent.status === 403 || spent.status === 429 || spent.status >= 500) {
      throw stateFailure(what, spent, `configmap ${this.paths.namespace}/${name}`);
    }
    // A test failed (422, or 409 after the API server's own retries): find out which, for the client's code.
    const got = await this.conn.send({ method: 'GET', path: this.paths.configMap(name) }, what);
    if (got.status === 404) {
      checkNonce(undefined, consumer, now);
      return;
    }
    if (got.status !== 200) throw stateFailure(what, got, `configmap ${this.paths.namespace}/${name}`);
    const object = got.body as KubeObject;
    checkNonce(object.data?.['nonce'] === nonce ? this.record(object) : undefined, consumer, now);
    throw tenantError('ERR_TENANT_NONCE_REUSED', 'the nonce was already used (a nonce is good for one Tenant)', { path: '$.spec.nonce' });
  }

  async outstanding(consumer: string, now: Date): Promise<string[]> {
    const found: Array<{ nonce: string; expiresAt: number }> = [];
    const selector = `${LABEL_KIND}=nonce,${LABEL_CONSUMER}=${consumer},${LABEL_NONCE_STATE}=outstanding`;
    for await (const object of listConfigMaps(this.conn, this.paths, selector, `listing the nonces of ${consumer}`)) {
      const record = this.record(object);
      const nonce = object.data?.['nonce'];
      if (nonce !== undefined && record.consumer === consumer && record.expiresAt > now.getTime()) found.push({ nonce, expiresAt: record.expiresAt });
    }
    return found.sort((a, b) => a.expiresAt - b.expiresAt).map((entry) => entry.nonce);
  }

  /** Outstanding, unexpired nonces of every consumer. */
  async count(now: Date): Promise<number> {
    let count = 0;
    for await (const object of listConfigMaps(this.conn, this.paths, `${LABEL_KIND}=nonce,${LABEL_NONCE_STATE}=outstanding`, 'counting the nonces')) {
      if (Date.parse(object.data?.['expiresAt'] ?? '') > now.getTime()) count += 1;
    }
    return count;
  }

  /**
   * Deletes the nonce objects whose nonce and request have both expired; any replica may run it at any time. Each
   * delete is conditioned on the uid and resourceVersion listed, so a lost race (404, 409) changes nothing. It lists
   * only objects whose `expires-minute` is one of the last 30 minutes (live nonces are not sent over); `sweep`
   * lists every nonce object (what a replica that was down longer left behind). Returns how many this call deleted.
   */
  async collect(now: Date, options: { sweep?: boolean } = {}): Promise<number> {
    const nowSeconds = now.getTime() / 1000;
    const minute = Math.floor(now.getTime() / 60_000);
    const minutes = Array.from({ length: COLLECT_MINUTES }, (_, back) => minute - back).join(',');
    const selector = options.sweep === true ? `${LABEL_KIND}=nonce` : `${LABEL_KIND}=nonce,${LABEL_EXPIRES_MINUTE} in (${minutes})`;
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
              body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: meta.uid, resourceVersion: meta.resourceVersion } },
            },
            'collecting an expired nonce',
          ),
        ),
      );
      for (const answer of answers) {
        if (answer.status === 200 || answer.status === 202) deleted += 1;
        else if (answer.status !== 404 && answer.status !== 409) throw stateFailure('collecting an expired nonce', answer, this.paths.configMaps());
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
  maxPerConsumer?: number;
  log?(line: string): void;
}

/** Opens the state in NS: the client CA (and serving CA) created or read, the collector started. */
export async function kubernetesState(conn: StateConnection, options: KubernetesStateOptions): Promise<IssuerState & { nonceBook: KubernetesNonces; trustStore: KubernetesTrustStore }> {
  const paths = new Paths(options.namespace);
  const now = options.now();
  const clientCa = await ensureCaSecret(conn, paths, CLIENT_CA_SECRET, 'client', options.providerClusterID, now);
  const servingCa = options.tls === undefined ? await ensureCaSecret(conn, paths, SERVING_CA_SECRET, 'serving', options.providerClusterID, now) : undefined;
  const nonces = new KubernetesNonces(conn, options.namespace, options.maxPerConsumer === undefined ? {} : { maxPerConsumer: options.maxPerConsumer });
  const trust = new KubernetesTrustStore(conn, options.namespace);
  const every = options.collectEveryMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  let collecting: Promise<unknown> | undefined;
  let closed = false;
  let runs = 0;
  const schedule = (): void => {
    if (every <= 0 || closed) return;
    timer = setTimeout(() => {
      collecting = nonces
        .collect(options.now(), { sweep: runs++ % 10 === 0 })
        .catch((error: unknown) => options.log?.(`collecting expired nonces failed: ${(error as Error).message}`))
        .finally(schedule);
    }, every * (0.5 + Math.random()));
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
      const response = await conn.send({ method: 'GET', path: paths.configMaps(`?labelSelector=${encodeURIComponent(`${LABEL_KIND}=nonce`)}&limit=1`) }, what, signal);
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
export async function stateConnection(settings: IssuerSettings, deps: { env: Env; cwd: string }): Promise<{ conn: StateConnection; namespace: string }> {
  const load = () =>
    loadKubeAccess(
      { kubeconfig: settings.kubeconfig, context: settings.kubeContext, flag: '--kubeconfig', what: "the issuer state's kubeconfig" },
      { env: deps.env, cwd: deps.cwd },
    );
  const access = await load();
  const namespace = settings.namespace ?? access.namespace;
  if (namespace === undefined || namespace === '') {
    throw new CredentialsError('ERR_USAGE', '--state kubernetes needs --namespace (the kubeconfig context names none)', { path: '--namespace' });
  }
  if (!DNS_LABEL.test(namespace) || namespace.length > 63) {
    throw new CredentialsError('ERR_USAGE', `--namespace ${JSON.stringify(namespace)} is not a namespace name (a DNS label)`, { path: '--namespace' });
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
      ...(tls === undefined ? {} : { tls }),
      ...(deps.log === undefined ? {} : { log: deps.log }),
    });
  } catch (error) {
    await conn.close();
    throw error;
  }
}
