/**
 * One exchange: a request written on a connection from the pool (or a new one), its answer read with HTTP/1.1
 * (`http1.ts`) into an {@link HttpResponse} — the body bounded by the client's limit or streamed to the caller, an
 * error answer cleared of the credentials sent, JSON parsed when the answer says it is JSON — and the connection
 * parked for the next request when the answer leaves it reusable.
 */
import type { Socket } from 'node:net';
import { withoutUserinfo } from '../errors.js';
import { HttpFailure } from './failures.js';
import { type AnswerHandlers, AnswerReader, requestHead } from './http1.js';
import type { Pool } from './pool.js';
import type { Route } from './route.js';
import { targetOf } from './url.js';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
  /** An absolute http(s) URL; with `base`, a path and query appended to the base URL's path. */
  url: string | URL;
  base?: string | URL;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Sent as JSON (instead of `body`), with content type `contentType` ?? application/json. */
  json?: unknown;
  /** The content type of `body` or `json`, unless `headers` already set one. */
  contentType?: string;
  /**
   * More strings an error answer must not quote back (the bearer token of an `authorization` header always is):
   * they are replaced by `[REDACTED]` in the body of answers with status 300 and above.
   */
  secrets?: readonly string[];
  /**
   * Streams a 2xx answer: each chunk of its body goes to this function as it arrives, nothing is buffered (the
   * answer's `body` is then empty and `maxResponseBytes` does not apply: the receiver bounds what it keeps). For
   * long-lived answers such as a Kubernetes watch; other statuses are read as usual.
   */
  onChunk?: (chunk: Buffer) => void;
}

export interface HttpResponse {
  status: number;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  body: Buffer;
  /** The body as UTF-8. */
  text: string;
  /** The parsed body when the content type is JSON (`application/json`, `…+json`) and it parses; else undefined. */
  json: unknown;
  /** The request URL, without userinfo. */
  url: string;
}

/** What an exchange takes from its client. */
export interface ExchangeContext {
  route: (url: URL) => Route;
  pool: Pool;
  /** The largest answer body read (bytes); more is a `too-large` failure. */
  maxResponseBytes: number;
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** Sends `request` to `url` and reads its answer; `signal` ends the exchange (and its connection) early. */
export async function exchange(
  request: HttpRequest,
  url: URL,
  signal: AbortSignal,
  context: ExchangeContext,
): Promise<HttpResponse> {
  const headers: Record<string, string> = { ...request.headers };
  let body: string | Uint8Array | undefined = request.body;
  if (request.json !== undefined) body = JSON.stringify(request.json);
  const hasContentType = Object.keys(headers).some((name) => name.toLowerCase() === 'content-type');
  if (body !== undefined && !hasContentType && (request.contentType !== undefined || request.json !== undefined)) {
    headers['content-type'] = request.contentType ?? 'application/json';
  }
  const route = context.route(url);
  // An http origin through an http:// proxy gets the absolute URL sent to the proxy; anything else goes over a
  // connection (or tunnel) to the origin.
  const forward =
    route.kind === 'http-proxy' && url.protocol === 'http:' && route.proxy.protocol === 'http:' ? route : undefined;
  const connectTo = forward === undefined ? url : forward.proxy;
  const outgoing: Record<string, string> = { host: url.host, ...headers };
  if (forward?.authorization !== undefined) outgoing['proxy-authorization'] = forward.authorization;
  const payload = body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  if (payload !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-length'))
    outgoing['content-length'] = String(payload.length);

  const path = forward === undefined ? `${url.pathname}${url.search}` : url.href;
  const head = Buffer.from(requestHead(request.method, path, outgoing), 'latin1');
  const connection = context.pool.acquire(connectTo, forward === undefined ? route : { kind: 'direct' });
  // A new direct connection is written to (and listened on) in the tick it was made: its errors are never missed.
  const socket = connection instanceof Promise ? await connection : connection;

  let status = 0;
  let raw: string[] = [];
  let streamed = false;
  const chunks: Buffer[] = [];
  let size = 0;
  const { maxResponseBytes } = context;
  const answer = await roundTrip(
    socket,
    payload === undefined ? head : Buffer.concat([head, payload]),
    request.method,
    signal,
    {
      onHead(answerHead) {
        status = answerHead.status;
        raw = answerHead.rawHeaders;
        streamed = request.onChunk !== undefined && status >= 200 && status < 300;
      },
      onBody(chunk) {
        if (streamed) {
          request.onChunk?.(chunk);
          return;
        }
        size += chunk.length;
        // Stop reading (and the connection with it): never buffer an answer past the limit.
        if (size > maxResponseBytes) {
          throw new HttpFailure('too-large', `the answer is larger than ${maxResponseBytes} bytes`, {
            url: url.href,
            target: targetOf(request),
            limit: maxResponseBytes,
          });
        }
        chunks.push(chunk);
      },
    },
  );
  if (answer.reusable) context.pool.release(connectTo, socket, answer.idleMs);
  else socket.destroy();
  return response(status, raw, Buffer.concat(chunks), url, [bearerOf(headers), ...(request.secrets ?? [])]);
}

/**
 * Writes one request on `socket` and reads its answer into `handlers`; settles when the answer is complete or the
 * exchange fails (the connection is then destroyed), or `signal` aborts it.
 */
function roundTrip(
  socket: Socket,
  bytes: Buffer,
  method: string,
  signal: AbortSignal,
  handlers: AnswerHandlers,
): Promise<AnswerReader> {
  return new Promise((resolve, reject) => {
    const reader = new AnswerReader(method, handlers);
    let settled = false;
    const finish = (error?: unknown): void => {
      if (settled) return;
      settled = true;
      socket.off('data', onData).off('end', onEnd).off('close', onEnd).off('error', finish);
      signal.removeEventListener('abort', onAbort);
      if (error === undefined) {
        resolve(reader);
      } else {
        socket.destroy();
        reject(error);
      }
    };
    const attempt = (work: () => boolean | undefined): void => {
      try {
        if (work() === true) finish();
      } catch (error) {
        finish(error);
      }
    };
    const onData = (chunk: Buffer): void => attempt(() => reader.push(chunk));
    const onEnd = (): void =>
      attempt(() => {
        reader.end();
        return true;
      });
    const onAbort = (): void => finish(signal.reason);
    if (signal.aborted) {
      onAbort();
      return;
    }
    socket.on('data', onData).on('end', onEnd).on('close', onEnd).on('error', finish);
    signal.addEventListener('abort', onAbort, { once: true });
    socket.write(bytes);
  });
}

/**
 * The answer as the caller sees it: every header as sent (repeated ones joined), the body as text and JSON, and an
 * error answer (status 300 and above) cleared of `secrets`.
 */
function response(
  status: number,
  raw: readonly string[],
  received: Buffer,
  url: URL,
  secrets: readonly (string | undefined)[],
): HttpResponse {
  let body = received;
  let text = body.toString('utf8');
  if (status >= 300) {
    // An error answer is only ever shown to people: never let it carry a credential we sent back into a message
    // (auth proxies and debug endpoints repeat the credential they refused).
    const present = secrets
      .filter((secret): secret is string => secret !== undefined && secret !== '')
      .sort((a, b) => b.length - a.length);
    if (present.some((secret) => text.includes(secret))) {
      for (const secret of present) text = text.replaceAll(secret, '[REDACTED]');
      body = Buffer.from(text, 'utf8');
    }
  }
  const headers: Record<string, string> = {};
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = raw[index]!.toLowerCase();
    headers[name] = name in headers ? `${headers[name]}, ${raw[index + 1]!}` : raw[index + 1]!;
  }
  let json: unknown;
  if (JSON_TYPE.test(headers['content-type'] ?? '')) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status, headers, body, text, json, url: withoutUserinfo(url.href) };
}

/** The bearer token of an `authorization` header. */
function bearerOf(headers: Record<string, string>): string | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === 'authorization') {
      const match = /^Bearer\s+(\S+)/i.exec(value);
      if (match !== null) return match[1];
    }
  }
  return undefined;
}
