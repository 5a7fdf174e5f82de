/**
 * The nonces of the Kubernetes state: sealed (./sealed-nonces.ts), so issuing one writes nothing; spent by creating
 * `issuer-spent-<id>`, whose create the API server grants once; with --liqo-compat also recorded as
 * `issuer-nonce-<id>`. Records past their expiry are collected by any replica (./kubernetes-state.ts describes the
 * whole scheme).
 */
import type { LoopReport } from '../../background.js';
import { randomBytes } from 'node:crypto';
import { isCredentialsError } from '../../../base/errors.js';
import type { KubeResponse } from '../../../kube/types.js';
import { tenantError } from '../../../wire/tenant-cert/protocol.js';
import type { AnsweredRequest, NonceBook } from '../issuer-state.js';
import type { StateConnection } from './connection.js';
import { LABEL_CONSUMER, LABEL_KIND, Paths, listConfigMaps, stateFailure, type ObjectMeta } from './objects.js';
import type { NonceSeal } from './sealed-nonces.js';

export const LABEL_NONCE_STATE = 'credentials.clusterprofile.io/nonce-state';
/** Seconds since the epoch after which the object may be collected. */
export const LABEL_EXPIRES = 'credentials.clusterprofile.io/expires';
/** The same, in minutes since the epoch (rounded up): the collector selects past minutes instead of listing everything. */
export const LABEL_EXPIRES_MINUTE = 'credentials.clusterprofile.io/expires-minute';
/** How many past minutes a collection selects; a full sweep (every tenth collection) finds anything older. */
const COLLECT_MINUTES = 30;
/**
 * How long a spent-nonce record outlives its nonce's expiry before it may be collected: a replica whose clock is
 * behind the collector's by less than this still finds the record (a nonce it thinks unexpired cannot be spent twice).
 */
export const SPENT_GRACE_MS = 60_000;

/** The record that a nonce was spent: `issuer-spent-` and the nonce's id (./sealed-nonces.ts). */
export const spentObjectName = (id: string): string => `issuer-spent-${id}`;
/** With --liqo-compat, the record of an issued nonce. */
export const issuedObjectName = (id: string): string => `issuer-nonce-${id}`;

const expiresLabel = (ms: number): string => String(Math.ceil(ms / 1000));

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
  readonly #paths: Paths;
  /** Nonces issued by this replica and not spent by it, by id, in issue order (so about in expiry order). */
  readonly #issued = new Map<string, { nonce: string; consumer: string; expiresAt: number }>();
  readonly #random: (size: number) => Buffer;
  readonly #maxRemembered: number;
  readonly #recordIssued: boolean;
  readonly #conn: StateConnection;
  readonly #seal: NonceSeal;

  constructor(conn: StateConnection, namespace: string, seal: NonceSeal, options: KubernetesNonceOptions = {}) {
    this.#conn = conn;
    this.#seal = seal;
    this.#paths = new Paths(namespace);
    this.#random = options.random ?? randomBytes;
    this.#maxRemembered = options.maxRemembered ?? 100_000;
    this.#recordIssued = options.recordIssued ?? false;
  }

  /** Drops remembered nonces that expired (from the oldest, until a live one) and the oldest beyond the bound. */
  #forget(nowMs: number): void {
    for (const [id, entry] of this.#issued) {
      if (entry.expiresAt > nowMs && this.#issued.size <= this.#maxRemembered) break;
      this.#issued.delete(id);
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
    const { nonce, id } = this.#seal.seal(consumer, expiresAt, this.#random);
    if (this.#recordIssued) await this.#record(nonce, id, consumer, expiresAt);
    this.#issued.set(id, { nonce, consumer, expiresAt });
    this.#forget(now.getTime());
    return { nonce, expiresAt: new Date(expiresAt) };
  }

  /**
   * Checks the seal (MAC, consumer, expiry: no API call, nothing written when it fails), then spends the nonce with
   * one create of `issuer-spent-<id>`: 201 spends it here, 409 AlreadyExists means another Tenant did.
   */
  async take(nonce: string, consumer: string, now: Date): Promise<void> {
    const { id, expiresAt } = this.#seal.open(nonce, consumer, now);
    const name = spentObjectName(id);
    const what = `spending a nonce of ${consumer}`;
    const made = await this.#createNonceObject(name, consumer, 'spent', expiresAt, undefined, what);
    if (made.status === 201) {
      this.#issued.delete(id);
      return;
    }
    if (made.status === 409) {
      this.#issued.delete(id);
      throw tenantError('ERR_TENANT_NONCE_REUSED', 'the nonce was already used (a nonce is good for one Tenant)', {
        path: '$.spec.nonce',
        hint: 'ask for a new nonce',
      });
    }
    throw stateFailure(what, made, `configmap ${this.#paths.namespace}/${name}`);
  }

  /** `issuer-nonce-<id>`: the issued nonce, for the other replicas (--liqo-compat). */
  async #record(nonce: string, id: string, consumer: string, expiresAt: number): Promise<void> {
    const what = `recording a nonce of ${consumer}`;
    const made = await this.#createNonceObject(issuedObjectName(id), consumer, 'issued', expiresAt, { nonce }, what);
    if (made.status !== 201)
      throw stateFailure(what, made, `configmap ${this.#paths.namespace}/${issuedObjectName(id)}`);
  }

  /** Creates a nonce object, collectable SPENT_GRACE_MS after the nonce's expiry; the API server's answer as it is. */
  #createNonceObject(
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
    return this.#conn.send(
      {
        method: 'POST',
        path: this.#paths.configMaps(),
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
    this.#forget(nowMs);
    const found = new Map<string, number>();
    for (const entry of this.#issued.values()) {
      if (entry.consumer === consumer && entry.expiresAt > nowMs) found.set(entry.nonce, entry.expiresAt);
    }
    if (this.#recordIssued) {
      const selector = `${LABEL_KIND}=nonce,${LABEL_NONCE_STATE}=issued,${LABEL_CONSUMER}=${consumer}`;
      await listConfigMaps(this.#conn, this.#paths, selector, `listing the nonces of ${consumer}`, (object) => {
        const nonce = object.data?.['nonce'];
        if (nonce === undefined || found.has(nonce)) return;
        try {
          found.set(nonce, this.#seal.open(nonce, consumer, now).expiresAt);
        } catch (error) {
          if (!isCredentialsError(error)) throw error;
        }
      });
    }
    return [...found].sort((a, b) => a[1] - b[1]).map(([nonce]) => nonce);
  }

  /** Unexpired nonces this replica issued and did not see spent (a replica's own figure: see the module comment). */
  async count(now: Date): Promise<number> {
    const nowMs = now.getTime();
    this.#forget(nowMs);
    let count = 0;
    for (const entry of this.#issued.values()) if (entry.expiresAt > nowMs) count += 1;
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
    await listConfigMaps(this.#conn, this.#paths, selector, 'listing nonces to collect', (object) => {
      const until = Number(object.metadata?.labels?.[LABEL_EXPIRES]);
      if (object.metadata !== undefined && Number.isFinite(until) && until < nowSeconds) expired.push(object.metadata);
    });
    let deleted = 0;
    for (let index = 0; index < expired.length; index += 8) {
      const answers = await Promise.all(
        expired.slice(index, index + 8).map((meta) =>
          this.#conn.send(
            {
              method: 'DELETE',
              path: this.#paths.configMap(meta.name ?? ''),
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
          throw stateFailure('collecting an expired nonce', answer, this.#paths.configMaps());
      }
    }
    return deleted;
  }
}

/**
 * Collects expired nonce records every `everyMs` (±50 % jitter; 0: never), a full sweep every tenth run; a run that
 * fails is reported (to `report` when given, else logged) and the next one scheduled. `stop` cancels the next run and
 * waits for one under way.
 */
export function startCollecting(
  nonces: KubernetesNonces,
  everyMs: number,
  now: () => Date,
  log?: (line: string) => void,
  report?: LoopReport,
): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let collecting: Promise<unknown> | undefined;
  let stopped = false;
  let runs = 0;
  const schedule = (): void => {
    if (everyMs <= 0 || stopped) return;
    timer = setTimeout(
      () => {
        collecting = nonces
          .collect(now(), { sweep: runs++ % 10 === 0 })
          .then(
            () => report?.succeeded(),
            (error: unknown) =>
              report === undefined
                ? log?.(`collecting expired nonces failed: ${(error as Error).message}`)
                : report.failed(error),
          )
          .finally(schedule);
      },
      everyMs * (0.5 + Math.random()),
    );
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await collecting;
    },
  };
}
