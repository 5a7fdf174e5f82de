/**
 * List and watch one collection of an API server, the way client-go's reflector does, for every caller of this
 * package (the issuer's Tenant reconciler, the fleet's inventory of ClusterProfiles):
 *
 * - {@link listPages}: a list in pages (`limit`/`continue`), each page handed over as it arrives; an expired continue
 *   token (410) starts the list over;
 * - {@link watchOnce}: one watch from a resourceVersion with bookmarks, its server-side timeout jittered (5 to 10
 *   minutes unless given), streamed through the HTTP seam (the transport's `onChunk`) and ended when silent past an
 *   idle deadline (the server sends a bookmark about once a minute: a silent watch is a dead one), a kept-alive
 *   connection found stale retried once; 410 Gone (as the answer's status or an ERROR event) is {@link WatchGone};
 * - {@link listAndWatch}: the loop over both — list, hand every item over, watch from the list's resourceVersion,
 *   resume each watch at the last resourceVersion seen, list again when that version is gone or a request fails
 *   (after a pause). The fleet runs its own loop over the first two (src/fleet/inventory-watch.ts: its backoff,
 *   events and metrics).
 *
 * Events are handed over one at a time, in order: the next waits until the handler's promise settles.
 *
 * @example
 * ```ts
 * const stop = new AbortController();
 * await listAndWatch({ send: kube.send, stream: kube.stream.bind(kube), path: '/apis/g/v1/namespaces/ns/things',
 *   onEvent: async (type, object) => { ... }, signal: stop.signal });
 * ```
 */
import { streamOver, type KubeStreamEnd, type KubeStreamOptions } from './kube-client.js';
import { statusMessage } from './status.js';
import type { SendKubeRequest } from './types.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One object of a collection: what the watch needs of it. */
export interface WatchedObject {
  metadata?: { name?: string; resourceVersion?: string };
}

/** A streamed GET with an idle deadline: {@link KubeClient.stream} (default: {@link streamOver} the `send`). */
export type StreamGet = (
  path: string,
  onChunk: (chunk: Buffer) => void,
  options: KubeStreamOptions,
) => Promise<KubeStreamEnd>;

/** A watch that has said nothing (not even a bookmark) for this long is reopened. */
export const DEFAULT_WATCH_IDLE_MS = 180_000;

/** A watch event line longer than this is refused (an object of ours, or a ClusterProfile, is a few kB). */
export const MAX_EVENT_BYTES = 4 * 1024 * 1024;

/** How often an expired continue token starts a list over before the list fails. */
const LIST_RESTARTS = 3;

/** The resourceVersion is gone (HTTP 410, or an ERROR event with code 410): list again. */
export class WatchGone extends Error {
  override readonly name = 'WatchGone';
}

/** A list or watch answered with a status other than 200 (or the watch sent an ERROR event): callers name it. */
export class KubeStatusError extends Error {
  override readonly name = 'KubeStatusError';
  readonly status: number;
  readonly body: unknown;
  readonly verb: 'list' | 'watch';

  constructor(verb: 'list' | 'watch', path: string, status: number, body: unknown) {
    const detail = statusMessage(body);
    super(
      `${verb === 'list' ? 'listing' : 'watching'} ${path} answered ${status}${detail === undefined ? '' : `: ${detail}`}`,
    );
    this.verb = verb;
    this.status = status;
    this.body = body;
  }
}

/** The watch stream broke its format: a line that is not JSON, or one longer than {@link MAX_EVENT_BYTES}. */
export class WatchStreamError extends Error {
  override readonly name = 'WatchStreamError';
  readonly reason: 'not-json' | 'too-large';

  constructor(reason: 'not-json' | 'too-large') {
    super(
      reason === 'not-json'
        ? 'the watch sent a line that is not JSON'
        : `a watch event is larger than ${MAX_EVENT_BYTES} bytes`,
    );
    this.reason = reason;
  }
}

/**
 * A watch stream cut into its events: one JSON object per line, whatever the chunks' boundaries. `push` hands each
 * complete, non-blank line to `onLine` and answers false once what is left of the current line is longer than
 * {@link MAX_EVENT_BYTES} (the caller ends the watch).
 */
export class WatchLines {
  #pending = '';

  push(chunk: Buffer, onLine: (line: string) => void): boolean {
    this.#pending += chunk.toString('utf8');
    for (let newline = this.#pending.indexOf('\n'); newline >= 0; newline = this.#pending.indexOf('\n')) {
      const line = this.#pending.slice(0, newline).trim();
      this.#pending = this.#pending.slice(newline + 1);
      if (line !== '') onLine(line);
    }
    return this.#pending.length <= MAX_EVENT_BYTES;
  }
}

/** One page of a list, as the API server sent it. */
export interface ListPage {
  apiVersion?: unknown;
  items?: unknown;
  metadata?: { resourceVersion?: unknown; continue?: unknown };
}

export interface ListPagesOptions {
  signal: AbortSignal;
  /** Items per page (client-go's reflector asks for 500); undefined: one list without `limit`. */
  pageSize?: number;
  /** Before each attempt: the first, and each start over after an expired continue token. */
  onStart?(): void;
  /** Each page as it arrives, in order (dropped after: a large collection never sits in memory at once). */
  onPage(page: ListPage): void | Promise<void>;
}

/**
 * Lists `path` page by page. Resolves with the list's resourceVersion (where a watch starts); rejects with
 * {@link KubeStatusError} for an answer other than 200 (a continue token that keeps expiring: its 410), or with the
 * transport's error.
 */
export async function listPages(
  send: SendKubeRequest,
  path: string,
  options: ListPagesOptions,
): Promise<{ resourceVersion: string }> {
  const separator = path.includes('?') ? '&' : '?';
  for (let restart = 0; ; restart += 1) {
    options.onStart?.();
    let token: string | undefined;
    let resourceVersion = '';
    let expired: KubeStatusError | undefined;
    do {
      const query =
        options.pageSize === undefined
          ? ''
          : `${separator}limit=${options.pageSize}${token === undefined ? '' : `&continue=${encodeURIComponent(token)}`}`;
      const answer = await send({ method: 'GET', path: `${path}${query}` }, { signal: options.signal });
      if (answer.status === 410 && token !== undefined) {
        // The snapshot the continue token pointed into is gone: start the list over.
        expired = new KubeStatusError('list', path, answer.status, answer.body);
        break;
      }
      if (answer.status !== 200) throw new KubeStatusError('list', path, answer.status, answer.body);
      const page = (typeof answer.body === 'object' && answer.body !== null ? answer.body : {}) as ListPage;
      const meta = page.metadata ?? {};
      if (typeof meta.resourceVersion === 'string') resourceVersion = meta.resourceVersion;
      token = typeof meta.continue === 'string' && meta.continue !== '' ? meta.continue : undefined;
      await options.onPage(page);
    } while (token !== undefined && !options.signal.aborted);
    if (expired === undefined) return { resourceVersion };
    if (restart >= LIST_RESTARTS) throw expired;
  }
}

/** One watch event; `object` is the item (for BOOKMARK, only its metadata matters). */
export interface WatchEvent<T> {
  type: WatchEventType | 'BOOKMARK';
  object: T;
}

export interface WatchOnceOptions<T> {
  send: SendKubeRequest;
  /** Default: {@link streamOver} `send`. */
  stream?: StreamGet;
  /** The collection. */
  path: string;
  resourceVersion: string;
  /** Each event, BOOKMARK included, in order; the next waits for the promise. A handler that throws ends the watch. */
  onEvent(event: WatchEvent<T>): void | Promise<void>;
  signal: AbortSignal;
  /** The server-side timeout; default 300 to 600 s, drawn with `random` so that watches do not end together. */
  timeoutSeconds?: number;
  random?: () => number;
  /** Default {@link DEFAULT_WATCH_IDLE_MS}. */
  idleMs?: number;
}

/** The server-side timeout of a watch: as given, else between 5 and 10 minutes like client-go's reflector. */
export function watchTimeoutSeconds(given: number | undefined, random: () => number = Math.random): number {
  return given ?? 300 + Math.floor(random() * 300);
}

/**
 * One watch request from `resourceVersion`. Resolves when the stream ends (the server's timeout, a connection cut
 * after it opened, silence past the idle deadline) with the last resourceVersion seen and the number of events (and
 * bookmarks) handed over; rejects with {@link WatchGone}, {@link KubeStatusError} (an answer other than 200, or an
 * ERROR event: its code and Status), {@link WatchStreamError}, the handler's error, or the transport's error when the
 * watch cannot be opened.
 */
export async function watchOnce<T extends WatchedObject>(
  options: WatchOnceOptions<T>,
): Promise<{ resourceVersion: string; events: number }> {
  const timeoutSeconds = watchTimeoutSeconds(options.timeoutSeconds, options.random);
  const separator = options.path.includes('?') ? '&' : '?';
  const url = `${options.path}${separator}watch=1&allowWatchBookmarks=true&timeoutSeconds=${timeoutSeconds}&resourceVersion=${encodeURIComponent(options.resourceVersion)}`;
  let resourceVersion = options.resourceVersion;
  let events = 0;
  const lines = new WatchLines();
  let failure: unknown;
  // Events are handled in order, one at a time, while the stream goes on arriving.
  let chain: Promise<void> = Promise.resolve();
  const stop = new AbortController();
  const signal = AbortSignal.any([options.signal, stop.signal]);
  const fail = (error: unknown): void => {
    failure ??= error;
    stop.abort();
  };

  const handleLine = (line: string): void => {
    let event: { type?: string; object?: unknown };
    try {
      event = JSON.parse(line) as typeof event;
    } catch {
      fail(new WatchStreamError('not-json'));
      return;
    }
    const object = (typeof event.object === 'object' && event.object !== null ? event.object : {}) as T & {
      code?: unknown;
    };
    if (event.type === 'ERROR') {
      fail(
        object.code === 410
          ? new WatchGone('the watch resourceVersion is too old')
          : new KubeStatusError('watch', options.path, typeof object.code === 'number' ? object.code : 500, object),
      );
      return;
    }
    if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED' && event.type !== 'BOOKMARK')
      return;
    const type = event.type;
    const version = object.metadata?.resourceVersion;
    chain = chain.then(async () => {
      // Events that came before an ERROR event or a bad line are still handed over; only the caller's stop skips them.
      if (options.signal.aborted) return;
      events += 1;
      await options.onEvent({ type, object });
      if (typeof version === 'string' && version !== '') resourceVersion = version;
    });
    // A handler that throws ends this watch (see below, `await chain`); until then the rejection is not unhandled.
    chain.catch((error: unknown) => fail(error));
  };

  const stream =
    options.stream ?? ((path, onChunk, streamOptions) => streamOver(options.send, path, onChunk, streamOptions));
  const end = await stream(
    url,
    (chunk) => {
      if (failure !== undefined) return;
      if (!lines.push(chunk, handleLine)) fail(new WatchStreamError('too-large'));
    },
    {
      signal,
      // The stream lasts the server's timeout; the deadline leaves it time to end it.
      timeoutMs: (timeoutSeconds + 30) * 1000,
      idleMs: options.idleMs ?? DEFAULT_WATCH_IDLE_MS,
    },
  ).catch((error: unknown) => {
    // Our own stop (an ERROR event, a bad line) ends the request: report why, not the abort.
    if (failure !== undefined || options.signal.aborted) return undefined;
    throw error;
  });
  await chain.catch(() => undefined);
  if (failure !== undefined) throw failure;
  if (end?.kind === 'answer') {
    const { response } = end;
    if (response.status === 410) throw new WatchGone('the watch resourceVersion is too old');
    if (response.status !== 200) throw new KubeStatusError('watch', options.path, response.status, response.body);
  }
  return { resourceVersion, events };
}

export interface ListAndWatchOptions<T extends WatchedObject> {
  send: SendKubeRequest;
  /** Watches: default {@link streamOver} `send`. */
  stream?: StreamGet;
  /** The collection, e.g. `/apis/credentials.clusterprofile.io/v1alpha1/namespaces/ns/tenants`. */
  path: string;
  /** Every object of the first list and of each relist is handed over as ADDED. */
  onEvent(type: WatchEventType, object: T): Promise<void>;
  /** Stops the loop (the promise of listAndWatch resolves). */
  signal: AbortSignal;
  /** How long one watch request lasts on the server; default 300 to 600 s (jittered). It is then resumed. */
  timeoutSeconds?: number;
  random?: () => number;
  /** Default {@link DEFAULT_WATCH_IDLE_MS}. */
  idleMs?: number;
  /** Items per list page; default: one list without `limit`. */
  pageSize?: number;
  /** Pause after a failed list or watch before the next list (default 1 s). */
  retryDelayMs?: number;
  /** A line about each failure and relist (the loop itself never stops on them). */
  log?(line: string): void;
  /** Told after each list (succeeded) and each failed list or watch (failed): the caller's health of the loop. */
  report?: { succeeded(): void; failed(error: unknown): void };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Runs until `signal` aborts; never rejects because of the API server (failures are logged and retried). */
export async function listAndWatch<T extends WatchedObject>(options: ListAndWatchOptions<T>): Promise<void> {
  const { send, path, signal } = options;
  const retryDelayMs = options.retryDelayMs ?? 1000;
  while (!signal.aborted) {
    let resourceVersion: string;
    try {
      ({ resourceVersion } = await listPages(send, path, {
        signal,
        ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
        onPage: async (page) => {
          for (const item of Array.isArray(page.items) ? (page.items as T[]) : []) {
            if (signal.aborted) return;
            await options.onEvent('ADDED', item);
          }
        },
      }));
      if (signal.aborted) return;
      options.report?.succeeded();
    } catch (error) {
      if (signal.aborted) return;
      options.report?.failed(error);
      options.log?.(`list ${path} failed: ${(error as Error).message}; again in ${retryDelayMs} ms`);
      await pause(retryDelayMs, signal);
      continue;
    }
    // Watch from there until the version is gone or a request fails.
    try {
      for (;;) {
        if (signal.aborted) return;
        const opened = Date.now();
        const watched = await watchOnce<T>({
          send,
          ...(options.stream === undefined ? {} : { stream: options.stream }),
          path,
          resourceVersion,
          signal,
          ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }),
          ...(options.random === undefined ? {} : { random: options.random }),
          ...(options.idleMs === undefined ? {} : { idleMs: options.idleMs }),
          onEvent: async (event) => {
            if (event.type !== 'BOOKMARK') await options.onEvent(event.type, event.object);
          },
        });
        resourceVersion = watched.resourceVersion;
        // A watch that ends at once with nothing to say (a server cutting every stream) is not reopened in a tight loop.
        if (watched.events === 0 && Date.now() - opened < 1000) await pause(retryDelayMs, signal);
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof WatchGone) {
        options.log?.(`watch ${path}: resourceVersion ${resourceVersion} is gone (410); listing again`);
        continue;
      }
      options.report?.failed(error);
      options.log?.(`watch ${path} failed: ${(error as Error).message}; listing again in ${retryDelayMs} ms`);
      await pause(retryDelayMs, signal);
    }
  }
}
