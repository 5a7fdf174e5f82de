/** The trust records of the Kubernetes state: one ConfigMap `issuer-trust-<consumer ID>` per trusted consumer. */
import type { KeyObject } from 'node:crypto';
import { CredentialsError } from '../../../base/errors.js';
import { checkClusterId, isClusterId } from '../../../wire/tenant-cert/cluster-id.js';
import type { TrustSource } from '../issuer-state.js';
import { parseTrustRecord, trustRecordText, type TrustRecord, type TrustedConsumer } from '../trust-record.js';
import type { StateConnection } from './connection.js';
import { LABEL_CONSUMER, LABEL_KIND, Paths, listConfigMaps, stateFailure, type KubeObject } from './objects.js';

export const trustObjectName = (clusterID: string): string => `issuer-trust-${clusterID}`;

/**
 * Trust records as ConfigMaps `issuer-trust-<consumer ID>`. A record read is reused for `maxAgeMs` (default 1 s)
 * before it is read again: a trust or untrust reaches every replica within that second (certificates already issued
 * stay valid until they expire in any case), and a handshake's two requests cost one read instead of two.
 */
export class KubernetesTrustStore implements TrustSource {
  readonly #cache = new Map<string, { version: string; consumer: TrustedConsumer; readAt: number }>();
  readonly #paths: Paths;
  readonly #conn: StateConnection;
  readonly #maxAgeMs: number;

  constructor(conn: StateConnection, namespace: string, maxAgeMs = 1000) {
    this.#conn = conn;
    this.#paths = new Paths(namespace);
    this.#maxAgeMs = maxAgeMs;
  }

  #where(clusterID: string): string {
    return `configmap ${this.#paths.namespace}/${trustObjectName(clusterID)}`;
  }

  #parse(clusterID: string, object: KubeObject): TrustedConsumer {
    const where = this.#where(clusterID);
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
    const fresh = this.#cache.get(clusterID);
    if (fresh !== undefined && readAt - fresh.readAt < this.#maxAgeMs) return fresh.consumer;
    const response = await this.#conn.send(
      { method: 'GET', path: this.#paths.configMap(trustObjectName(clusterID)) },
      `reading the trust record of ${clusterID}`,
    );
    if (response.status === 404) {
      this.#cache.delete(clusterID);
      return undefined;
    }
    if (response.status !== 200)
      throw stateFailure(`reading the trust record of ${clusterID}`, response, this.#where(clusterID));
    const object = response.body as KubeObject;
    const version = object.metadata?.resourceVersion ?? '';
    const cached = this.#cache.get(clusterID);
    const consumer =
      cached !== undefined && cached.version === version ? cached.consumer : this.#parse(clusterID, object);
    this.#cache.set(clusterID, { version, consumer, readAt });
    return consumer;
  }

  /** Records (or replaces) a consumer's key and groups. */
  async trust(clusterID: string, publicKey: KeyObject, groups: readonly string[], now: Date): Promise<TrustRecord> {
    checkClusterId(clusterID, '--cluster-id');
    this.#cache.delete(clusterID);
    const { record, text } = trustRecordText(clusterID, publicKey, groups, now);
    const object = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: trustObjectName(clusterID), labels: { [LABEL_KIND]: 'trust', [LABEL_CONSUMER]: clusterID } },
      data: { 'record.json': text },
    };
    const where = this.#where(clusterID);
    const made = await this.#conn.send(
      { method: 'POST', path: this.#paths.configMaps(), body: object },
      `creating the trust record ${where}`,
    );
    if (made.status === 201) return record;
    if (made.status !== 409) throw stateFailure(`creating the trust record ${where}`, made, where);
    const replaced = await this.#conn.send(
      { method: 'PUT', path: this.#paths.configMap(trustObjectName(clusterID)), body: object },
      `replacing the trust record ${where}`,
    );
    if (replaced.status !== 200) throw stateFailure(`replacing the trust record ${where}`, replaced, where);
    return record;
  }

  /** Removes a consumer; false when it was not trusted. */
  async untrust(clusterID: string): Promise<boolean> {
    checkClusterId(clusterID, '--cluster-id');
    this.#cache.delete(clusterID);
    const where = this.#where(clusterID);
    const response = await this.#conn.send(
      { method: 'DELETE', path: this.#paths.configMap(trustObjectName(clusterID)) },
      `deleting the trust record ${where}`,
    );
    if (response.status === 404) return false;
    if (response.status !== 200 && response.status !== 202)
      throw stateFailure(`deleting the trust record ${where}`, response, where);
    return true;
  }

  async list(): Promise<TrustedConsumer[]> {
    const consumers: TrustedConsumer[] = [];
    await listConfigMaps(this.#conn, this.#paths, `${LABEL_KIND}=trust`, 'listing the trust records', (object) => {
      const id = object.metadata?.labels?.[LABEL_CONSUMER];
      if (id !== undefined && isClusterId(id)) consumers.push(this.#parse(id, object));
    });
    return consumers.sort((a, b) => a.clusterID.localeCompare(b.clusterID));
  }
}
