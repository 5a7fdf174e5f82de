/**
 * Outstanding and consumed nonces and the replay memory of signed nonce requests, in memory and in an append-only
 * journal `DATA_DIR/nonces.journal` (one JSON object per line). A nonce is single use: {@link NonceStore.consume} marks it in memory at once (so a concurrent
 * replay in the same process already fails) and resolves only when the journal line is on disk (fsync), before the
 * issuer signs anything. Appends of many requests share one write and one fsync (group commit).
 *
 * Crash safety: a crash mid-append leaves at most a torn last line, which {@link NonceStore.open} ignores; losing an
 * *issued* nonce that was not yet synced only makes its Tenant fail (the client fetches a new nonce), and a
 * *consumed* nonce is synced before any certificate leaves. Opening compacts the journal (expired entries dropped)
 * by writing a new file atomically; so does a running store once dead lines dominate.
 */
import { randomBytes } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { CredentialsError } from '../../../base/errors.js';
import { NONCE_BYTES, type NonceRecord } from '../issuer-state.js';
import { readOptional, writeFileAtomic } from './files.js';

type JournalEntry =
  | { op: 'issue'; nonce: string; consumer: string; expiresAt: number }
  | { op: 'consume'; nonce: string }
  | { op: 'answered'; key: string; until: number };

export interface NonceStoreOptions {
  /** Outstanding (unconsumed, unexpired) nonces kept per consumer; issuing one more retires the oldest. */
  maxPerConsumer?: number;
  /** Live entries in total before new nonces are refused (ERR_ISSUER_BUSY). */
  maxEntries?: number;
  random?: (size: number) => Buffer;
  /** The clock for background compaction. */
  now?: () => Date;
}

interface Pending {
  line: string;
  durable: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

export class NonceStore {
  readonly #records = new Map<string, NonceRecord>();
  /** Signed nonce requests answered (the replay memory, see {@link NonceStore.remember}): key → forget-at ms. */
  readonly #answered = new Map<string, number>();
  /** Per consumer, its unconsumed nonces in issue order (may still hold expired ones until pruned). */
  readonly #open = new Map<string, Set<string>>();
  readonly #queue: Pending[] = [];
  #flushing: Promise<void> | undefined;
  #lines = 0;
  #handle: FileHandle | undefined;
  readonly #maxPerConsumer: number;
  readonly #maxEntries: number;
  readonly #random: (size: number) => Buffer;
  readonly #now: () => Date;

  // `private constructor`: ECMAScript has no `#constructor`; only the static open() makes a store.
  private constructor(
    readonly file: string,
    options: NonceStoreOptions,
  ) {
    this.#maxPerConsumer = options.maxPerConsumer ?? 16;
    this.#maxEntries = options.maxEntries ?? 100_000;
    this.#random = options.random ?? randomBytes;
    this.#now = options.now ?? (() => new Date());
  }

  /** Replays and compacts the journal, then opens it for appending. */
  static async open(file: string, now: Date, options: NonceStoreOptions = {}): Promise<NonceStore> {
    const store = new NonceStore(file, options);
    const text = (await readOptional(file)) ?? '';
    for (const line of text.split('\n')) {
      if (line.trim() === '') {
        continue;
      }
      let entry: JournalEntry;
      try {
        entry = JSON.parse(line) as JournalEntry;
      } catch {
        continue; // a torn line from a crash mid-append
      }
      if (typeof entry !== 'object' || entry === null) {
        continue; // not an entry (a damaged line): skipped like a torn one
      }
      store.#apply(entry);
    }
    store.#prune(now.getTime());
    await writeFileAtomic(file, store.#snapshot());
    store.#lines = store.#records.size * 2 + store.#answered.size;
    store.#handle = await open(file, 'a', 0o600);
    return store;
  }

  #apply(entry: JournalEntry): void {
    if (
      entry.op === 'issue' &&
      typeof entry.nonce === 'string' &&
      typeof entry.consumer === 'string' &&
      typeof entry.expiresAt === 'number'
    ) {
      if (!this.#records.has(entry.nonce)) {
        this.#records.set(entry.nonce, { consumer: entry.consumer, expiresAt: entry.expiresAt, consumed: false });
        this.#openSet(entry.consumer).add(entry.nonce);
      }
    } else if (entry.op === 'consume' && typeof entry.nonce === 'string') {
      this.#markConsumed(entry.nonce);
    } else if (entry.op === 'answered' && typeof entry.key === 'string' && typeof entry.until === 'number') {
      this.#answered.set(entry.key, entry.until);
    }
  }

  #openSet(consumer: string): Set<string> {
    let set = this.#open.get(consumer);
    if (set === undefined) {
      set = new Set();
      this.#open.set(consumer, set);
    }
    return set;
  }

  #markConsumed(nonce: string): NonceRecord | undefined {
    const record = this.#records.get(nonce);
    if (record !== undefined) {
      record.consumed = true;
      const set = this.#open.get(record.consumer);
      set?.delete(nonce);
      if (set?.size === 0) {
        this.#open.delete(record.consumer);
      }
    }
    return record;
  }

  #prune(nowMs: number): void {
    for (const [nonce, record] of this.#records) {
      if (record.expiresAt <= nowMs) {
        this.#markConsumed(nonce);
        this.#records.delete(nonce);
      }
    }
    for (const [key, until] of this.#answered) {
      if (until <= nowMs) {
        this.#answered.delete(key);
      }
    }
  }

  /** The consumer's unconsumed, unexpired nonces, oldest first. */
  #openFor(consumer: string, nowMs: number): string[] {
    const result: string[] = [];
    for (const nonce of this.#open.get(consumer) ?? []) {
      if ((this.#records.get(nonce)?.expiresAt ?? 0) > nowMs) {
        result.push(nonce);
      }
    }
    return result;
  }

  #snapshot(): string {
    let text = '';
    for (const [nonce, record] of this.#records) {
      text += `${JSON.stringify({ op: 'issue', nonce, consumer: record.consumer, expiresAt: record.expiresAt })}\n`;
      if (record.consumed) {
        text += `${JSON.stringify({ op: 'consume', nonce })}\n`;
      }
    }
    for (const [key, until] of this.#answered) {
      text += `${JSON.stringify({ op: 'answered', key, until })}\n`;
    }
    return text;
  }

  /**
   * A new nonce for `consumer`, valid for `ttlMs`. `durable`: wait for fsync (the CLI, which exits right after);
   * the server does not, since a lost unsynced nonce only makes one handshake retry.
   */
  async issue(
    consumer: string,
    ttlMs: number,
    now: Date,
    durable = false,
  ): Promise<{ nonce: string; expiresAt: Date }> {
    const nowMs = now.getTime();
    if (this.#records.size >= this.#maxEntries) {
      this.#prune(nowMs);
      if (this.#records.size >= this.#maxEntries) {
        throw new CredentialsError('ERR_ISSUER_BUSY', 'too many outstanding nonces; try again later');
      }
    }
    // Expired entries of this consumer leave its index here (the records themselves at the next prune).
    const set = this.#open.get(consumer);
    for (const nonce of set ?? []) {
      if ((this.#records.get(nonce)?.expiresAt ?? 0) <= nowMs) {
        set?.delete(nonce);
      }
    }
    const outstanding = this.#openFor(consumer, nowMs);
    const retire = outstanding.slice(0, Math.max(0, outstanding.length - this.#maxPerConsumer + 1));
    const nonce = this.#random(NONCE_BYTES).toString('base64');
    const expiresAt = nowMs + ttlMs;
    this.#records.set(nonce, { consumer, expiresAt, consumed: false });
    this.#openSet(consumer).add(nonce);
    const writes: Array<Promise<void>> = [];
    for (const old of retire) {
      this.#markConsumed(old);
      writes.push(this.#append({ op: 'consume', nonce: old }, false));
    }
    writes.push(this.#append({ op: 'issue', nonce, consumer, expiresAt }, durable));
    await Promise.all(writes);
    return { nonce, expiresAt: new Date(expiresAt) };
  }

  /**
   * The replay memory: records `key` (what a signed nonce request's signature covers) until `untilMs`; false when it
   * is already recorded and not yet forgotten. Journaled without waiting for fsync: it reaches the disk with the
   * next synced line (the Tenant that follows a nonce request syncs the journal) and at close, so a restart keeps it.
   */
  remember(key: string, untilMs: number, nowMs: number): boolean {
    const known = this.#answered.get(key);
    if (known !== undefined && known > nowMs) {
      return false;
    }
    this.#answered.set(key, untilMs);
    void this.#append({ op: 'answered', key, until: untilMs }, false).catch(() => undefined);
    return true;
  }

  /** Outstanding (unconsumed, unexpired) nonces of every consumer. */
  count(nowMs: number): number {
    let count = 0;
    for (const record of this.#records.values()) {
      if (!record.consumed && record.expiresAt > nowMs) count += 1;
    }
    return count;
  }

  get(nonce: string): NonceRecord | undefined {
    const record = this.#records.get(nonce);
    return record === undefined ? undefined : { ...record };
  }

  /** The consumer's unconsumed, unexpired nonces, oldest first (Liqo-shaped Tenants do not say which one they signed). */
  outstanding(consumer: string, now: Date): string[] {
    return this.#openFor(consumer, now.getTime());
  }

  /**
   * Marks the nonce used (in memory synchronously) and resolves once that is on disk. Returns false when it was
   * already used (by a concurrent request).
   */
  consume(nonce: string): { first: boolean; durable: Promise<void> } {
    const record = this.#records.get(nonce);
    if (record === undefined || record.consumed) {
      return { first: false, durable: Promise.resolve() };
    }
    this.#markConsumed(nonce);
    return { first: true, durable: this.#append({ op: 'consume', nonce }, true) };
  }

  #append(entry: JournalEntry, durable: boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ line: `${JSON.stringify(entry)}\n`, durable, resolve, reject });
      this.#flushing ??= this.#flush().finally(() => {
        this.#flushing = undefined;
      });
    });
  }

  async #flush(): Promise<void> {
    // Let every request of this turn of the event loop join the batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0);
      try {
        const handle = this.#handle;
        if (handle === undefined) {
          throw new Error('the nonce journal is closed');
        }
        await handle.write(batch.map((p) => p.line).join(''));
        if (batch.some((p) => p.durable)) {
          await handle.datasync();
        }
        this.#lines += batch.length;
        for (const pending of batch) {
          pending.resolve();
        }
      } catch (error) {
        for (const pending of batch) {
          pending.reject(error);
        }
      }
      if (this.#lines > 4 * (this.#records.size + this.#answered.size) + 10_000) {
        await this.#compact(this.#now()).catch(() => undefined);
      }
    }
  }

  /** Rewrites the journal with live entries only (atomically), then appends to the new file. */
  async #compact(now: Date): Promise<void> {
    this.#prune(now.getTime());
    await writeFileAtomic(this.file, this.#snapshot());
    const previous = this.#handle;
    this.#handle = await open(this.file, 'a', 0o600);
    this.#lines = this.#records.size * 2 + this.#answered.size;
    await previous?.close();
  }

  /** Waits for pending appends, syncs and closes the journal. */
  async close(): Promise<void> {
    while (this.#flushing !== undefined) {
      await this.#flushing;
    }
    const handle = this.#handle;
    this.#handle = undefined;
    if (handle !== undefined) {
      await handle.sync();
      await handle.close();
    }
  }
}
