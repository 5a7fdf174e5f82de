/**
 * List and watch one collection of an API server, the way client-go's informers do: list, hand every item over,
 * then watch from the list's resourceVersion (bookmarks on), hand every change over, resume each watch at the last
 * resourceVersion seen, and list again when the server says that version is gone (410 Gone, as an ERROR event or as
 * the answer's status) or the connection fails (after a pause). Events are handed over one at a time, in order: the
 * next waits until the handler's promise settles.
 *
 * @example
 * ```ts
 * const stop = new AbortController();
 * await listAndWatch({ send, path: '/apis/g/v1/namespaces/ns/things', onEvent: async (type, object) => { ... }, signal: stop.signal });
 * ```
 */
import { statusMessage } from './status.js';
import type { SendKubeRequest } from './types.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One object of a collection: what the watch needs of it. */
export interface WatchedObject {
  metadata?: { name?: string; resourceVersion?: string };
}

export interface ListAndWatchOptions<T extends WatchedObject> {
  /** A transport whose deadline is longer than {@link ListAndWatchOptions.timeoutSeconds} (a watch lasts that long). */
  send: SendKubeRequest;
  /** The collection, e.g. `/apis/credentials.clusterprofile.io/v1alpha1/namespaces/ns/tenants`. */
  path: string;
  /** Every object of the first list and of each relist is handed over as ADDED. */
  onEvent(type: WatchEventType, object: T): Promise<void>;
  /** Stops the loop (the promise of listAndWatch resolves). */
  signal: AbortSignal;
  /** How long one watch request lasts on the server (default 300 s); it is then resumed. */
  timeoutSeconds?: number;
  /** Pause after a failed list or watch before the next list (default 1 s). */
  retryDelayMs?: number;
  /** A line about each failure and relist (the loop itself never stops on them). */
  log?(line: string): void;
}

/** A watch event line longer than this is refused (an object of ours, or a ClusterProfile, is a few kB). */
export const MAX_EVENT_BYTES = 4 * 1024 * 1024;

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

class Gone extends Error {}

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
  const timeoutSeconds = options.timeoutSeconds ?? 300;
  const separator = path.includes('?') ? '&' : '?';
  while (!signal.aborted) {
    let resourceVersion: string;
    try {
      const list = await send({ method: 'GET', path }, { signal });
      if (list.status !== 200) {
        throw new Error(
          `listing ${path} answered ${list.status}${statusMessage(list.body) === undefined ? '' : `: ${statusMessage(list.body)}`}`,
        );
      }
      const body = list.body as { metadata?: { resourceVersion?: string }; items?: T[] };
      resourceVersion = body.metadata?.resourceVersion ?? '';
      for (const item of body.items ?? []) {
        if (signal.aborted) return;
        await options.onEvent('ADDED', item);
      }
    } catch (error) {
      if (signal.aborted) return;
      options.log?.(`list ${path} failed: ${(error as Error).message}; again in ${options.retryDelayMs ?? 1000} ms`);
      await pause(options.retryDelayMs ?? 1000, signal);
      continue;
    }
    // Watch from there until the version is gone or a request fails.
    try {
      for (;;) {
        if (signal.aborted) return;
        resourceVersion = await watchOnce(
          options,
          `${path}${separator}watch=1&allowWatchBookmarks=true&timeoutSeconds=${timeoutSeconds}&resourceVersion=${encodeURIComponent(resourceVersion)}`,
          resourceVersion,
        );
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof Gone) {
        options.log?.(`watch ${path}: resourceVersion ${resourceVersion} is gone (410); listing again`);
        continue;
      }
      options.log?.(
        `watch ${path} failed: ${(error as Error).message}; listing again in ${options.retryDelayMs ?? 1000} ms`,
      );
      await pause(options.retryDelayMs ?? 1000, signal);
    }
  }
}

/** One watch request; resolves with the last resourceVersion seen when the server ends it. */
async function watchOnce<T extends WatchedObject>(
  options: ListAndWatchOptions<T>,
  url: string,
  from: string,
): Promise<string> {
  let resourceVersion = from;
  const lines = new WatchLines();
  let failure: Error | undefined;
  // Events are handled in order, one at a time, while the stream goes on arriving.
  let chain: Promise<void> = Promise.resolve();
  const stop = new AbortController();
  const signal = AbortSignal.any([options.signal, stop.signal]);

  const handleLine = (line: string): void => {
    let event: { type?: string; object?: unknown };
    try {
      event = JSON.parse(line) as typeof event;
    } catch {
      failure ??= new Error('the watch sent a line that is not JSON');
      stop.abort();
      return;
    }
    const object = event.object as (T & { code?: number }) | undefined;
    if (event.type === 'ERROR') {
      failure ??=
        object?.code === 410
          ? new Gone()
          : new Error(`the watch ended with an error: ${statusMessage(object) ?? JSON.stringify(object)}`);
      stop.abort();
      return;
    }
    const version = object?.metadata?.resourceVersion;
    if (event.type === 'BOOKMARK') {
      // In order with the events before it, which set the version when they are handled.
      chain = chain.then(() => {
        if (version !== undefined) resourceVersion = version;
      });
      return;
    }
    if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED') return;
    const type = event.type;
    chain = chain.then(async () => {
      // Events that came before an ERROR event or a bad line are still handed over; only the caller's stop skips them.
      if (options.signal.aborted || object === undefined) return;
      await options.onEvent(type, object);
      if (version !== undefined) resourceVersion = version;
    });
    // A handler that throws ends this watch (see below, `await chain`); until then the rejection is not unhandled.
    chain.catch(() => undefined);
  };

  const response = await options
    .send(
      {
        method: 'GET',
        path: url,
        onChunk: (chunk) => {
          if (failure !== undefined) return;
          if (!lines.push(chunk, handleLine)) {
            failure ??= new Error(`a watch event is larger than ${MAX_EVENT_BYTES} bytes`);
            stop.abort();
          }
        },
      },
      { signal },
    )
    .catch((error: unknown) => {
      // Our own stop (an ERROR event, a bad line) ends the request: report why, not the abort.
      if (failure !== undefined || options.signal.aborted) return undefined;
      throw error;
    });
  await chain;
  if (failure !== undefined) throw failure;
  if (response !== undefined && response.status === 410) throw new Gone();
  if (response !== undefined && response.status !== 200) {
    throw new Error(
      `the watch answered ${response.status}${statusMessage(response.body) === undefined ? '' : `: ${statusMessage(response.body)}`}`,
    );
  }
  return resourceVersion;
}
