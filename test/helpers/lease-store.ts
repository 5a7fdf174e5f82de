/**
 * An in-memory stand-in for the API server's Lease endpoints (coordination.k8s.io/v1) for the sharding unit tests:
 * list by label selector, get, create (409 when it exists), update (409 unless the resourceVersion matches), each
 * answered asynchronously as a SendKubeRequest. A replica can be cut off (its requests fail as if the API server did
 * not answer) or refused (403), and a Lease can be overwritten by hand. The e2e tests run the same code against the
 * real kube-apiserver.
 */
import type { KubeRequest, KubeResponse, SendKubeRequest } from '../../src/kube/types.js';

type Lease = Record<string, unknown> & { metadata: Record<string, unknown> };

export class LeaseStore {
  readonly leases = new Map<string, Lease>();
  /** Replicas whose requests fail (unreachable) or are refused (403). */
  readonly cut = new Set<string>();
  readonly refused = new Set<string>();
  /** Writes (POST, PUT) answered 2xx, by replica. */
  readonly writes = new Map<string, number>();
  /** When each replica's last write was answered 2xx (`now()` of the store's clock). */
  readonly lastWriteAt = new Map<string, number>();
  /** When each replica listed the Leases (`now()` of the store's clock). */
  readonly listedAt = new Map<string, number[]>();
  #version = 1;
  readonly now: () => number;

  /** `now`: the clock {@link lastWriteAt} is read from (the test's frozen clock). */
  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** The `send` of one replica. */
  client(replica: string): SendKubeRequest {
    return async (request) => {
      await Promise.resolve();
      if (this.cut.has(replica)) throw new Error(`connect ECONNREFUSED (${replica} is cut off)`);
      if (this.refused.has(replica))
        return { status: 403, body: { kind: 'Status', message: `leases is forbidden: User "${replica}"` } };
      const response = this.#answer(request);
      if (
        request.method === 'GET' &&
        response.body !== undefined &&
        (response.body as { kind?: string }).kind === 'LeaseList'
      )
        this.listedAt.set(replica, [...(this.listedAt.get(replica) ?? []), this.now()]);
      if (request.method !== 'GET' && response.status < 300) {
        this.writes.set(replica, (this.writes.get(replica) ?? 0) + 1);
        this.lastWriteAt.set(replica, this.now());
      }
      return structuredClone(response);
    };
  }

  /** Writes `object` over Lease `name` as a person with kubectl would (a new resourceVersion). */
  overwrite(name: string, object: Record<string, unknown>): void {
    const current = this.leases.get(name);
    const metadata = { ...(current?.metadata ?? {}), ...((object['metadata'] as object | undefined) ?? {}) };
    this.leases.set(name, { ...object, metadata: { ...metadata, name, resourceVersion: String(++this.#version) } });
  }

  #answer(request: KubeRequest): KubeResponse {
    const url = new URL(request.path, 'https://hub');
    const parts = url.pathname.split('/');
    const name = parts.length > 7 ? decodeURIComponent(parts[7]!) : undefined;
    if (request.method === 'GET' && name === undefined) {
      const [key, value] = (url.searchParams.get('labelSelector') ?? '').split('=');
      const items = [...this.leases.values()].filter(
        (lease) => key === '' || (lease.metadata['labels'] as Record<string, string> | undefined)?.[key!] === value,
      );
      return { status: 200, body: { kind: 'LeaseList', items } };
    }
    if (request.method === 'GET') {
      const lease = this.leases.get(name!);
      return lease === undefined ? notFound(name!) : { status: 200, body: lease };
    }
    const body = structuredClone(request.body) as Lease;
    const target = request.method === 'POST' ? (body.metadata['name'] as string) : name!;
    const current = this.leases.get(target);
    if (request.method === 'POST' && current !== undefined) return conflict(target);
    if (request.method === 'PUT') {
      if (current === undefined) return notFound(target);
      if (body.metadata['resourceVersion'] !== current.metadata['resourceVersion']) return conflict(target);
    }
    body.metadata['resourceVersion'] = String(++this.#version);
    this.leases.set(target, body);
    return { status: request.method === 'POST' ? 201 : 200, body };
  }
}

function conflict(name: string): KubeResponse {
  return {
    status: 409,
    body: { kind: 'Status', reason: 'Conflict', message: `Operation cannot be fulfilled on leases "${name}"` },
  };
}

function notFound(name: string): KubeResponse {
  return { status: 404, body: { kind: 'Status', reason: 'NotFound', message: `leases "${name}" not found` } };
}
