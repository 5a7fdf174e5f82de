/**
 * The Leases (coordination.k8s.io/v1) a sharded fleet coordinates through, read and written on the hub's API server:
 * one per replica (its heartbeat) and one per virtual shard (its fence). Every write after creation is a compare-and-swap
 * on the resourceVersion, so of two writers only one wins; a conflict is an answer ({@link LeaseWrite}), not an error.
 * A Lease that does not read as one of ours (edited by hand, another writer) is reported as `problem` and kept, so the
 * coordinator can judge it by when it last changed. Other failures are coded: `ERR_FLEET_LEASE_FORBIDDEN` (401/403),
 * `ERR_FLEET_LEASE_REQUEST` (anything else, the API server unreachable included).
 */
import { CredentialsError, formatError } from '../../base/errors.js';
import { isRecord } from '../../base/record.js';
import { statusMessage } from '../../kube/status.js';
import type { SendKubeRequest } from '../../kube/types.js';

/** Labels and annotations on the fleet's Leases. */
export const LEASE_LABELS = {
  /** The inventory namespace the Lease coordinates (several fleets may share a lease namespace). */
  fleet: 'clusterprofile-credentials.io/fleet',
  /** `replica` or `shard`. */
  role: 'clusterprofile-credentials.io/lease-role',
} as const;
export const LEASE_ANNOTATIONS = {
  /** The process behind a holder identity (a random id per fleet object): tells two replicas of one identity apart. */
  instance: 'clusterprofile-credentials.io/instance',
  /** The number of virtual shards the replica was configured with. */
  shards: 'clusterprofile-credentials.io/shards',
  /** `true` on a replica Lease once every member the replica owns has had its first credential fetch. */
  settled: 'clusterprofile-credentials.io/settled',
} as const;

export type LeaseRole = 'replica' | 'shard';

/** One Lease as the coordinator reads it. */
export interface LeaseRecord {
  name: string;
  role: LeaseRole;
  resourceVersion: string;
  /** The holder identity; undefined when free. */
  holder: string | undefined;
  /** The holder's process (annotation). */
  instance: string | undefined;
  durationSeconds: number | undefined;
  /** Replica Leases: the shard count of that replica. */
  shards: number | undefined;
  /** Replica Leases: every member that replica owns has had its first credential fetch. */
  settled: boolean;
  /** Why the Lease does not read as one of ours (then holder and duration are not to be trusted). */
  problem: string | undefined;
}

/** What a replica writes into a Lease. */
export interface LeaseSpecInput {
  holder: string | undefined;
  instance: string;
  durationSeconds: number;
  shards?: number;
  /** Replica Leases: the replica's members are settled. */
  settled?: boolean;
  /** Set acquireTime and count a transition (a new holder). */
  acquired: boolean;
  /** The transitions before this write. */
  transitions: number;
}

/** The outcome of a create or compare-and-swap: the new version, or someone else wrote first. */
export type LeaseWrite = { ok: true; resourceVersion: string } | { ok: false; conflict: true };

/** Lease time as the API server wants it (MicroTime: RFC 3339 with six fractional digits). */
export function microTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Reads `object` as a Lease of the fleet; undefined when it is not a Lease object at all. */
export function leaseRecord(object: unknown): (LeaseRecord & { transitions: number }) | undefined {
  if (!isRecord(object) || !isRecord(object['metadata'])) return undefined;
  const metadata = object['metadata'];
  const name = metadata['name'];
  const resourceVersion = metadata['resourceVersion'];
  if (typeof name !== 'string' || typeof resourceVersion !== 'string') return undefined;
  const labels = isRecord(metadata['labels']) ? metadata['labels'] : {};
  const annotations = isRecord(metadata['annotations']) ? metadata['annotations'] : {};
  const spec = isRecord(object['spec']) ? object['spec'] : {};
  const problems: string[] = [];
  const role = labels[LEASE_LABELS.role];
  if (role !== 'replica' && role !== 'shard') problems.push(`label ${LEASE_LABELS.role} is ${JSON.stringify(role)}`);
  const holder = spec['holderIdentity'];
  if (holder !== undefined && holder !== null && typeof holder !== 'string')
    problems.push(`spec.holderIdentity is ${JSON.stringify(holder)}`);
  const duration = spec['leaseDurationSeconds'];
  const durationOk = typeof duration === 'number' && Number.isInteger(duration) && duration > 0;
  if (typeof holder === 'string' && holder !== '' && !durationOk)
    problems.push(`spec.leaseDurationSeconds is ${JSON.stringify(duration)}`);
  const instance = annotations[LEASE_ANNOTATIONS.instance];
  const shardsText = annotations[LEASE_ANNOTATIONS.shards];
  const shards = typeof shardsText === 'string' && /^[1-9]\d{0,5}$/.test(shardsText) ? Number(shardsText) : undefined;
  if (role === 'replica' && shards === undefined)
    problems.push(`annotation ${LEASE_ANNOTATIONS.shards} is ${JSON.stringify(shardsText)}`);
  const transitions = spec['leaseTransitions'];
  return {
    name,
    role: role === 'replica' ? 'replica' : 'shard',
    resourceVersion,
    holder: typeof holder === 'string' && holder !== '' ? holder : undefined,
    instance: typeof instance === 'string' ? instance : undefined,
    durationSeconds: durationOk ? duration : undefined,
    shards,
    settled: annotations[LEASE_ANNOTATIONS.settled] === 'true',
    problem: problems.length === 0 ? undefined : problems.join('; '),
    transitions: typeof transitions === 'number' && Number.isInteger(transitions) && transitions >= 0 ? transitions : 0,
  };
}

/** The fleet's Leases in one namespace, through the hub connection's `send`. */
export class LeaseApi {
  readonly #send: SendKubeRequest;
  readonly namespace: string;
  readonly #fleet: string;
  readonly #timeoutMs: number;
  readonly #now: () => number;

  /** `fleet`: the inventory namespace (the label value); `timeoutMs`: deadline of one request; `now`: epoch ms. */
  constructor(
    send: SendKubeRequest,
    options: { namespace: string; fleet: string; timeoutMs: number; now: () => number },
  ) {
    this.#send = send;
    this.namespace = options.namespace;
    this.#fleet = options.fleet;
    this.#timeoutMs = options.timeoutMs;
    this.#now = options.now;
  }

  get #collection(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.namespace)}/leases`;
  }

  /** Every Lease of this fleet (one list: replicas and shards). */
  async list(): Promise<(LeaseRecord & { transitions: number })[]> {
    const selector = encodeURIComponent(`${LEASE_LABELS.fleet}=${this.#fleet}`);
    const response = await this.#request('list', {
      method: 'GET',
      path: `${this.#collection}?labelSelector=${selector}`,
    });
    const items = isRecord(response) && Array.isArray(response['items']) ? response['items'] : [];
    return items.map(leaseRecord).filter((record) => record !== undefined);
  }

  /** Lease `name`, or undefined when there is none (one that lost the fleet's label is still found by name). */
  async get(name: string): Promise<(LeaseRecord & { transitions: number }) | undefined> {
    const body = await this.#request(
      'get',
      { method: 'GET', path: `${this.#collection}/${encodeURIComponent(name)}` },
      true,
    );
    return body === NOT_FOUND ? undefined : leaseRecord(body);
  }

  /** Creates Lease `name`; a conflict when it exists. */
  async create(name: string, role: LeaseRole, input: LeaseSpecInput): Promise<LeaseWrite> {
    return this.#write('create', { method: 'POST', path: this.#collection, body: this.#object(name, role, input) });
  }

  /** Replaces Lease `name` if it is still at `resourceVersion`; a conflict when someone wrote it since. */
  async replace(name: string, role: LeaseRole, resourceVersion: string, input: LeaseSpecInput): Promise<LeaseWrite> {
    const body = this.#object(name, role, input);
    (body['metadata'] as Record<string, unknown>)['resourceVersion'] = resourceVersion;
    return this.#write('update', { method: 'PUT', path: `${this.#collection}/${encodeURIComponent(name)}`, body });
  }

  #object(name: string, role: LeaseRole, input: LeaseSpecInput): Record<string, unknown> {
    const now = microTime(this.#now());
    const annotations: Record<string, string> = { [LEASE_ANNOTATIONS.instance]: input.instance };
    if (input.shards !== undefined) annotations[LEASE_ANNOTATIONS.shards] = String(input.shards);
    if (input.settled === true) annotations[LEASE_ANNOTATIONS.settled] = 'true';
    const spec: Record<string, unknown> = {
      leaseDurationSeconds: input.durationSeconds,
      renewTime: now,
      leaseTransitions: input.transitions + (input.acquired ? 1 : 0),
    };
    if (input.holder !== undefined) spec['holderIdentity'] = input.holder;
    if (input.acquired) spec['acquireTime'] = now;
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name,
        namespace: this.namespace,
        labels: { [LEASE_LABELS.fleet]: this.#fleet, [LEASE_LABELS.role]: role },
        annotations,
      },
      spec,
    };
  }

  async #write(verb: 'create' | 'update', request: Parameters<SendKubeRequest>[0]): Promise<LeaseWrite> {
    const body = await this.#request(verb, request, true);
    if (body === CONFLICT || body === NOT_FOUND) return { ok: false, conflict: true };
    const resourceVersion =
      isRecord(body) && isRecord(body['metadata']) ? body['metadata']['resourceVersion'] : undefined;
    if (typeof resourceVersion !== 'string') {
      throw new CredentialsError(
        'ERR_FLEET_LEASE_REQUEST',
        `the API server answered a Lease ${verb} without a resourceVersion`,
        {
          path: this.#collection,
        },
      );
    }
    return { ok: true, resourceVersion };
  }

  async #request(verb: string, request: Parameters<SendKubeRequest>[0], answersInBand = false): Promise<unknown> {
    let response: Awaited<ReturnType<SendKubeRequest>>;
    try {
      response = await this.#send(request, { timeoutMs: this.#timeoutMs });
    } catch (error) {
      throw new CredentialsError(
        'ERR_FLEET_LEASE_REQUEST',
        `cannot ${verb} leases.coordination.k8s.io in namespace ${this.namespace}: ${formatError(error)}`,
        { path: this.#collection, cause: error },
      );
    }
    if (response.status >= 200 && response.status < 300) return response.body;
    if (answersInBand && response.status === 409) return CONFLICT;
    // A Lease deleted under a compare-and-swap, or asked for by name and absent.
    if (answersInBand && response.status === 404) return NOT_FOUND;
    const detail = statusMessage(response.body) ?? `HTTP ${response.status}`;
    if (response.status === 401 || response.status === 403) {
      throw new CredentialsError(
        'ERR_FLEET_LEASE_FORBIDDEN',
        `the hub refused to ${verb} leases.coordination.k8s.io in namespace ${this.namespace} (HTTP ${response.status}): ${detail}`,
        {
          path: this.#collection,
          hint: `grant the fleet's identity get, list, create and update on leases.coordination.k8s.io in namespace ${this.namespace} (a Role and RoleBinding)`,
        },
      );
    }
    throw new CredentialsError(
      'ERR_FLEET_LEASE_REQUEST',
      `cannot ${verb} leases.coordination.k8s.io in namespace ${this.namespace} (HTTP ${response.status}): ${detail}`,
      { path: this.#collection },
    );
  }
}

const CONFLICT = Symbol('conflict');
const NOT_FOUND = Symbol('not found');
