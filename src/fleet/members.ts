/**
 * The fleet's members and their reconciliation: a profile as the hub has it now is resolved with the providers file
 * (resolveClusterAccess); the member's client (a ClusterProfileKubeConfig) is rebuilt only when the resolved access
 * changes as data (SHA-256 of its canonical JSON), so a status-only update (a condition's lastTransitionTime)
 * rebuilds nothing. A member is engaged (`added`) once it has a credential (and, with `requireHealthy`,
 * ControlPlaneHealthy is True); it stays engaged until its profile is deleted or becomes invalid (`removed`), or,
 * with `disengageUnhealthy`, until ControlPlaneHealthy turns False. A profile that fails resolution is that member's
 * state with its coded error; it never stops the others. Profiles are members by their member key (./member-key.ts):
 * a second profile with the key of one already held is invalid (`ERR_FLEET_DUPLICATE_MEMBER`) until the first lets go
 * of it (deleted, relabelled or handed over), and is then applied.
 *
 * Sharded (the fleet's `sharding` option): every profile is kept by virtual shard, but only the members of the shards
 * this replica owns are resolved and engaged; a shard acquired engages its members ({@link FleetMembers.adopt}), a
 * shard lost disengages them at once ({@link FleetMembers.disown}), and no member of a shard not owned is handed out.
 * Shards are chosen by member key, so every profile naming one member is on one replica, which sees the duplicate.
 */
import { canonicalJson } from '../base/canonical-json.js';
import { isRecord } from '../base/record.js';
import { sha256HexNative } from '../base/sha256.js';
import type { ClusterProfileKubeConfig } from '../client-node/build-config.js';
import { resolveClusterAccess } from '../resolve/cluster-access.js';
import type { ClusterProfile, ResolvedClusterAccess } from '../resolve/types.js';
import type { CredentialSlot, FleetCredentials } from './credentials/slots.js';
import type { FleetEventBus } from './events.js';
import type {
  ClusterProfileFleetOptions,
  CredentialMode,
  FleetEvent,
  FleetClusterState,
  FleetMember,
  HealthCondition,
} from './fleet-types.js';
import type { FleetMetrics } from './metrics.js';
import type { FleetClock } from './scheduler/clock.js';
import { duplicateMemberError, memberKeyOf } from './member-key.js';
import { shardOf } from './sharding/assignment.js';
import { errorSummary } from './status.js';

type ClientConstructor = typeof ClusterProfileKubeConfig;

/** One member cluster: the public {@link FleetMember} view, and the state {@link FleetMembers} keeps for it. */
export class Member implements FleetMember {
  readonly name: string;
  readonly namespace: string;
  /** The inventory member this profile stands for ({@link memberKeyOf}). */
  memberKey: string;
  readonly #owner: FleetMembers;
  access: ResolvedClusterAccess | undefined;
  accessHash: string | undefined;
  invalid: unknown;
  slot: CredentialSlot | undefined;
  client: ClusterProfileKubeConfig | undefined;
  healthy: boolean | undefined;
  condition: HealthCondition | undefined;
  engaged = false;
  /** Its virtual shard (0 when the fleet is not sharded). */
  shard = 0;
  reportedUnhealthy = false;
  rebuilds = 0;

  constructor(owner: FleetMembers, namespace: string, name: string, memberKey: string) {
    this.#owner = owner;
    this.namespace = namespace;
    this.name = name;
    this.memberKey = memberKey;
  }

  get state(): FleetClusterState {
    return this.#owner.stateOf(this);
  }

  get providerName(): string | undefined {
    return this.access?.providerName;
  }

  get mode(): CredentialMode | undefined {
    return this.slot?.mode;
  }

  get error(): unknown {
    return this.invalid ?? this.slot?.lastError;
  }

  get credentialExpiresAt(): number | undefined {
    return this.slot?.credential?.expiresAt;
  }

  get fetches(): number {
    return this.slot?.fetches ?? 0;
  }
}

/** What reconciliation reads of the fleet's options (read when used, as the fleet always has). */
export type FleetMembersOptions = Pick<
  ClusterProfileFleetOptions,
  'accessConfig' | 'warn' | 'requireHealthy' | 'disengageUnhealthy' | 'maxConnections'
>;

/** Which shards this replica owns (a sharded fleet). */
export interface MemberOwnership {
  readonly shards: number;
  /** Whether the replica may act on the shard's members now. */
  owns(shard: number): boolean;
}

/** Why a member is disengaged. */
export type RemovedReason = Extract<FleetEvent, { type: 'removed' }>['reason'];

export interface FleetMembersDeps {
  namespace: string;
  /** Set when the fleet is sharded. */
  ownership?: MemberOwnership | undefined;
  credentials: FleetCredentials;
  events: FleetEventBus;
  metrics: FleetMetrics;
  clock: FleetClock;
}

/** The members of one inventory, by name, and what happens to them as profiles and credentials change. */
export class FleetMembers {
  readonly #options: FleetMembersOptions;
  readonly #deps: FleetMembersDeps;
  readonly #members = new Map<string, Member>();
  /** Interned CA bundles. */
  readonly #strings = new Map<string, string>();
  /** Members by credential slot key. */
  readonly #bySlot = new Map<string, Set<Member>>();
  /** Slots whose first fetch has not ended yet. */
  readonly #unsettled = new Set<string>();
  #settledWaiters: (() => void)[] = [];
  /** Sharded: every profile of the inventory as last seen, by shard and member key (owned or not). */
  readonly #profiles = new Map<number, Map<string, unknown>>();
  /** Sharded: the shard each kept profile is filed under (its member key's; it moves when the key does). */
  readonly #shardOfProfile = new Map<string, number>();
  /** Member key → the name of the profile that holds it. */
  readonly #holders = new Map<string, string>();
  /** Profiles refused for a member key another profile holds, by name: applied again when it is let go of. */
  readonly #waiting = new Map<string, unknown>();
  /** Sharded with standby: credential slots held for members of shards this replica would inherit, by profile name. */
  readonly #standby = new Map<string, { shard: number; hash: string; slot: CredentialSlot }>();
  #standbyShards: ReadonlySet<number> = new Set();
  #synced = false;
  #Client: ClientConstructor | undefined;

  constructor(options: FleetMembersOptions, deps: FleetMembersDeps) {
    this.#options = options;
    this.#deps = deps;
  }

  /** From now on each member gets a client made with `Client` (the fleet's `clients` option). */
  buildClientsWith(Client: ClientConstructor): void {
    this.#Client = Client;
  }

  /** The member `name`; sharded, only while this replica owns its shard. */
  get(name: string): Member | undefined {
    const member = this.#members.get(name);
    return member === undefined || this.#owns(member.shard) ? member : undefined;
  }

  /** Sharded: the members engaged by this replica. */
  get size(): number {
    return this.#members.size;
  }

  values(): IterableIterator<Member> {
    return this.#members.values();
  }

  /** The first list of the inventory has been applied. */
  get synced(): boolean {
    return this.#synced;
  }

  /** The first list of the inventory is applied: {@link settled} can resolve. */
  markSynced(): void {
    this.#synced = true;
    this.#checkSettled();
  }

  /** Whether every member has had its first credential fetch end (what {@link settled} waits for). */
  get isSettled(): boolean {
    return this.#synced && this.#unsettled.size === 0;
  }

  /** Resolves when every member has had its first credential fetch end (a credential or an error), or is invalid. */
  settled(): Promise<void> {
    if (this.#synced && this.#unsettled.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push(resolve));
  }

  /** Resolves every {@link settled} still waiting (the fleet closed). */
  resolveSettled(): void {
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
  }

  /** The state of a member (its `state` getter). */
  stateOf(member: Member): FleetClusterState {
    if (member.access === undefined) return 'invalid';
    if (this.#unhealthy(member)) return 'unhealthy';
    const slot = member.slot;
    if (slot === undefined) return 'pending';
    if (this.#usable(slot)) return 'ready';
    return slot.lastError === undefined ? 'pending' : 'failing';
  }

  /** Removes every member whose name is not in `seen` (a full list no longer has it). */
  removeAllBut(seen: ReadonlySet<string>): void {
    const known = new Set([...this.#members.keys(), ...this.#shardOfProfile.keys(), ...this.#waiting.keys()]);
    for (const name of known) if (!seen.has(name)) this.remove(name, 'deleted');
  }

  /** Sharded: the shard is now this replica's: each of its members is applied (resolved, engaged). Returns how many. */
  adopt(shard: number): number {
    const profiles = this.#profiles.get(shard);
    if (profiles === undefined) return 0;
    for (const [name, profile] of profiles) {
      this.apply(name, profile);
      // The member holds the standby slot now (same plugin input, same slot): the standby reference goes.
      this.#unhold(name);
    }
    return profiles.size;
  }

  /**
   * Sharded: the shard is no longer this replica's: each of its members is disengaged now (`removed` with `reason`),
   * its client closed and its credential let go; the profiles are kept for a later {@link adopt}. Returns how many.
   */
  disown(shard: number, reason: RemovedReason): number {
    let count = 0;
    for (const name of this.#profiles.get(shard)?.keys() ?? []) {
      const member = this.#members.get(name);
      if (member === undefined) continue;
      count += 1;
      this.#drop(member, reason);
    }
    this.#checkSettled();
    return count;
  }

  /** A profile as the hub has it now: resolve, rebuild when the access changed, update health and engagement. */
  apply(name: string, profile: unknown): void {
    const key = memberKeyOf(profile, name);
    let member = this.#members.get(name);
    const ownership = this.#deps.ownership;
    let shard = 0;
    if (ownership !== undefined) {
      shard = shardOf(key, ownership.shards);
      const previous = this.#shardOfProfile.get(name);
      if (previous !== shard) {
        if (previous !== undefined) this.#profiles.get(previous)?.delete(name);
        this.#shardOfProfile.set(name, shard);
        if (member !== undefined) member.shard = shard;
      }
      let profiles = this.#profiles.get(shard);
      if (profiles === undefined) {
        profiles = new Map();
        this.#profiles.set(shard, profiles);
      }
      this.#park(profile);
      profiles.set(name, profile);
      if (!ownership.owns(shard)) {
        if (member !== undefined) this.#drop(member, 'handedOver');
        if (this.#standbyShards.has(shard)) this.#hold(name, profile, shard);
        else this.#unhold(name);
        return;
      }
    }
    if (member === undefined) {
      member = new Member(this, this.#deps.namespace, name, key);
      member.shard = shard;
      this.#members.set(name, member);
    } else if (member.memberKey !== key) {
      this.#letGo(member);
      member.memberKey = key;
    }
    const holder = this.#holders.get(key);
    if (holder !== undefined && holder !== name) {
      this.#waiting.set(name, profile);
      this.#invalidate(member, duplicateMemberError(this.#deps.namespace, name, key, holder));
      return;
    }
    this.#waiting.delete(name);
    this.#holders.set(key, name);
    const condition = healthConditionOf(profile);
    member.condition = condition;
    member.healthy = condition === undefined ? undefined : condition.status === 'True';

    let access: ResolvedClusterAccess;
    let hash: string;
    try {
      ({ access, hash } = this.#resolve(profile));
    } catch (error) {
      this.#invalidate(member, error);
      return;
    }
    if (member.accessHash === hash) {
      this.#reconcile(member);
      return;
    }
    const { credentials } = this.#deps;
    let slot: CredentialSlot;
    try {
      slot = credentials.acquire(access);
    } catch (error) {
      this.#invalidate(member, error);
      return;
    }
    const previousClient = member.client;
    const previousSlot = member.slot;
    const rebuilt = member.access !== undefined;
    member.access = access;
    member.accessHash = hash;
    member.invalid = undefined;
    member.client =
      this.#Client === undefined ? undefined : new this.#Client(access, credentials.cache, this.#clientOptions());
    this.#attach(member, slot);
    if (previousSlot !== undefined) this.#detach(member, previousSlot);
    if (previousClient !== undefined) void previousClient.close().catch(() => undefined);
    if (rebuilt) {
      member.rebuilds += 1;
      this.#deps.metrics.rebuild();
      if (member.engaged) this.#deps.events.emit({ type: 'updated', name, member, previousClient });
    }
    this.#reconcile(member);
  }

  /** The profile resolved with the providers file, and the hash of its resolved access (a rebuild when it changes). */
  #resolve(profile: unknown): { access: ResolvedClusterAccess; hash: string } {
    const access = resolveClusterAccess(
      profile as ClusterProfile,
      this.#options.accessConfig,
      this.#options.warn === undefined ? {} : { warn: this.#options.warn },
    );
    const hash = sha256HexNative(canonicalJson(access));
    // Members of one inventory mostly share a CA: one string for all of them instead of a copy each.
    const ca = access.cluster['certificate-authority-data'];
    if (ca !== undefined) access.cluster['certificate-authority-data'] = this.#intern(ca);
    return { access, hash };
  }

  /**
   * Sharded with standby: the shards this replica would inherit are now `shards`. Each of their members' credential
   * slots is held (fetched, then refreshed like any other) without a member, a client or an event; slots of shards
   * no longer in the set are let go. A shard adopted later finds its members' slots filled.
   */
  standby(shards: ReadonlySet<number>): void {
    this.#standbyShards = shards;
    for (const [name, held] of this.#standby) if (!shards.has(held.shard)) this.#unhold(name);
    for (const shard of shards)
      for (const [name, profile] of this.#profiles.get(shard) ?? []) this.#hold(name, profile, shard);
  }

  /** Standby slots held, and how many of them have a credential now. */
  standbyCounts(): { members: number; ready: number } {
    let ready = 0;
    for (const { slot } of this.#standby.values()) if (this.#usable(slot)) ready += 1;
    return { members: this.#standby.size, ready };
  }

  /** Holds the slot of a profile of a standby shard (a profile that does not resolve holds none). */
  #hold(name: string, profile: unknown, shard: number): void {
    if (this.#owns(shard)) return;
    let resolved: { access: ResolvedClusterAccess; hash: string };
    try {
      resolved = this.#resolve(profile);
    } catch {
      this.#unhold(name);
      return; // invalid: its owner reports it
    }
    const held = this.#standby.get(name);
    if (held !== undefined && held.hash === resolved.hash) {
      held.shard = shard;
      return;
    }
    let slot: CredentialSlot;
    try {
      slot = this.#deps.credentials.acquire(resolved.access);
    } catch {
      this.#unhold(name);
      return;
    }
    this.#unhold(name);
    this.#standby.set(name, { shard, hash: resolved.hash, slot });
  }

  #unhold(name: string): void {
    const held = this.#standby.get(name);
    if (held === undefined) return;
    this.#standby.delete(name);
    this.#deps.credentials.release(held.slot);
  }

  /** The profile is gone from the hub: the member's client is closed, its credential let go; `removed` if engaged. */
  remove(name: string, reason: 'deleted'): void {
    this.#unhold(name);
    const shard = this.#shardOfProfile.get(name);
    if (shard !== undefined) this.#profiles.get(shard)?.delete(name);
    this.#shardOfProfile.delete(name);
    this.#waiting.delete(name);
    const member = this.#members.get(name);
    if (member === undefined) return;
    this.#drop(member, reason);
    this.#checkSettled();
  }

  /**
   * Forgets the member: its client closed, its credential let go; `removed` if it was engaged; its member key let go
   * of (a profile waiting for it is applied).
   */
  #drop(member: Member, reason: RemovedReason): void {
    this.#members.delete(member.name);
    this.#teardown(member, reason === 'handedOver' || reason === 'fenced');
    if (member.engaged) {
      member.engaged = false;
      this.#deps.events.emit({ type: 'removed', name: member.name, reason });
    }
    this.#letGo(member);
  }

  /** The member no longer holds its key: the first profile waiting for that key is applied now. */
  #letGo(member: Member): void {
    const key = member.memberKey;
    if (this.#holders.get(key) !== member.name) return;
    this.#holders.delete(key);
    for (const [name, profile] of this.#waiting) {
      if (memberKeyOf(profile, name) !== key) continue;
      this.apply(name, profile);
      return;
    }
  }

  #owns(shard: number): boolean {
    return this.#deps.ownership === undefined || this.#deps.ownership.owns(shard);
  }

  /** After each fetch of a slot (`error` undefined on success): its members report and reconcile. */
  onCredential(slot: CredentialSlot, error: unknown): void {
    this.#unsettled.delete(slot.key);
    const members = this.#bySlot.get(slot.key);
    if (members !== undefined) {
      for (const member of members) {
        if (error !== undefined) {
          this.#deps.events.emit({
            type: 'credentialError',
            name: member.name,
            member,
            error,
            failures: slot.failures,
            retryAt: slot.retryAt,
          });
        }
        this.#reconcile(member);
      }
    }
    this.#checkSettled();
  }

  /**
   * The fleet closes: every engaged member is disengaged (`removed`, reason `closed`) and every member forgotten.
   * Resolves when their clients are closed.
   */
  close(): Promise<unknown> {
    const closing: Promise<void>[] = [];
    for (const member of this.#members.values()) {
      if (member.engaged) {
        member.engaged = false;
        this.#deps.events.emit({ type: 'removed', name: member.name, reason: 'closed' });
      }
      if (member.client !== undefined) closing.push(member.client.close().catch(() => undefined));
    }
    this.#members.clear();
    this.#bySlot.clear();
    this.#profiles.clear();
    this.#shardOfProfile.clear();
    this.#holders.clear();
    this.#waiting.clear();
    this.#standby.clear();
    this.#standbyShards = new Set();
    return Promise.all(closing);
  }

  /**
   * Trims a profile kept for a later {@link adopt}: who last wrote which field is not needed to resolve it again, and
   * the CA bundles its access providers repeat are interned (every profile of an inventory is kept on every replica).
   */
  #park(profile: unknown): void {
    if (!isRecord(profile)) return;
    if (isRecord(profile['metadata'])) delete profile['metadata']['managedFields'];
    const providers = isRecord(profile['status']) ? profile['status']['accessProviders'] : undefined;
    if (!Array.isArray(providers)) return;
    for (const provider of providers) {
      const cluster = isRecord(provider) ? provider['cluster'] : undefined;
      const ca = isRecord(cluster) ? cluster['certificate-authority-data'] : undefined;
      if (isRecord(cluster) && typeof ca === 'string') cluster['certificate-authority-data'] = this.#intern(ca);
    }
  }

  #intern(text: string): string {
    const known = this.#strings.get(text);
    if (known !== undefined) return known;
    if (this.#strings.size >= 1024) this.#strings.clear();
    this.#strings.set(text, text);
    return text;
  }

  #clientOptions(): { maxConnections?: number } {
    return this.#options.maxConnections === undefined ? {} : { maxConnections: this.#options.maxConnections };
  }

  /** The profile no longer resolves: no client, no credential; `removed` if it was engaged, then `invalid`. */
  #invalidate(member: Member, error: unknown): void {
    const known =
      member.accessHash === undefined &&
      member.invalid !== undefined &&
      errorSummary(member.invalid).message === errorSummary(error).message;
    this.#teardown(member);
    member.access = undefined;
    member.accessHash = undefined;
    member.invalid = error;
    if (member.engaged) {
      member.engaged = false;
      this.#deps.events.emit({ type: 'removed', name: member.name, reason: 'invalid' });
    }
    if (!known) this.#deps.events.emit({ type: 'invalid', name: member.name, member, error });
  }

  /**
   * Closes the member's client and lets go of its credential (forgotten when no other member shares it). With
   * `revoke` (its shard is no longer this replica's) requests in flight are aborted and the client refuses any more.
   */
  #teardown(member: Member, revoke = false): void {
    const client = member.client;
    member.client = undefined;
    if (member.slot !== undefined) this.#detach(member, member.slot);
    member.slot = undefined;
    if (client !== undefined) void client.close(revoke ? { revoke } : {}).catch(() => undefined);
  }

  #attach(member: Member, slot: CredentialSlot): void {
    member.slot = slot;
    let members = this.#bySlot.get(slot.key);
    if (members === undefined) {
      members = new Set();
      this.#bySlot.set(slot.key, members);
    }
    members.add(member);
    if (slot.fetches === 0 && slot.credential === undefined && slot.lastError === undefined)
      this.#unsettled.add(slot.key);
  }

  #detach(member: Member, slot: CredentialSlot): void {
    const members = this.#bySlot.get(slot.key);
    members?.delete(member);
    if (members !== undefined && members.size === 0) {
      this.#bySlot.delete(slot.key);
      this.#unsettled.delete(slot.key);
    }
    this.#deps.credentials.release(slot);
  }

  #checkSettled(): void {
    if (!this.#synced || this.#unsettled.size > 0) return;
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
  }

  #usable(slot: CredentialSlot): boolean {
    const credential = slot.credential;
    return (
      credential !== undefined && (credential.expiresAt === undefined || credential.expiresAt > this.#deps.clock.now())
    );
  }

  #unhealthy(member: Member): boolean {
    return this.#options.requireHealthy === true ? member.healthy !== true : member.healthy === false;
  }

  /** Engagement and health reports after anything about the member changed. */
  #reconcile(member: Member): void {
    if (member.access === undefined) return;
    // A shard past its fencing deadline is disowned by this check (the member is gone then).
    if (!this.#owns(member.shard)) return;
    const unhealthy = this.#unhealthy(member);
    if (unhealthy && !member.reportedUnhealthy) {
      member.reportedUnhealthy = true;
      this.#deps.events.emit({ type: 'unhealthy', name: member.name, member, condition: member.condition });
    } else if (!unhealthy) {
      member.reportedUnhealthy = false;
    }
    if (!member.engaged) {
      const gated = unhealthy && (this.#options.requireHealthy === true || this.#options.disengageUnhealthy === true);
      if (!gated && member.slot !== undefined && this.#usable(member.slot)) {
        member.engaged = true;
        this.#deps.events.emit({ type: 'added', name: member.name, member });
      }
    } else if (unhealthy && this.#options.disengageUnhealthy === true) {
      member.engaged = false;
      this.#deps.events.emit({ type: 'removed', name: member.name, reason: 'unhealthy' });
    }
  }
}

/** The profile's ControlPlaneHealthy condition, if it states one. */
function healthConditionOf(profile: unknown): HealthCondition | undefined {
  const conditions = (profile as { status?: { conditions?: unknown } } | null)?.status?.conditions;
  if (!Array.isArray(conditions)) return undefined;
  for (const condition of conditions) {
    if (typeof condition !== 'object' || condition === null) continue;
    const { type, status, reason, message } = condition as Record<string, unknown>;
    if (type !== 'ControlPlaneHealthy') continue;
    return {
      status: typeof status === 'string' ? status : 'Unknown',
      ...(typeof reason === 'string' ? { reason } : {}),
      ...(typeof message === 'string' ? { message } : {}),
    };
  }
  return undefined;
}
