/**
 * The one HTTP seam under every request builder / response processor pair (the Kubernetes transport, the OpenID
 * Provider client, the tenant-cert issuer client): HTTP/1.1 (`http/http1.ts`) over sockets it makes itself (TCP,
 * TLS with a per-client trust store, an HTTP CONNECT or SOCKS5 tunnel), kept alive per client; one deadline per send
 * that covers DNS, TCP connect, TLS, the request and the whole answer; one response body limit; one translation of
 * network errors into a classified {@link HttpFailure}; and retries with backoff that never run past the deadline.
 *
 * This module is the seam's door: what callers import, and all of it. The rooms behind it, under `http/`, one idea
 * each: `client.ts` (options, `createHttpClient` composing the rest), `failures.ts` (HttpFailure and the translation
 * of node's errors), `url.ts`, `tls.ts` (TLS options and their node form), `route.ts` (proxy or not, NO_PROXY),
 * `connect.ts` (sockets, TLS, connect deadlines), `tunnels.ts` (HTTP CONNECT, SOCKS5), `pool.ts` (keep-alive),
 * `exchange.ts` (one request and its answer), `deadline.ts` (one deadline per send), `http1.ts` (the wire codec).
 *
 * Built-ins are taken on the first send: modules on a plugin's cache-hit path may import this one for free. (undici,
 * used here before, and node:http after it cost a cache miss more to load than the exchange itself; see
 * docs/explanation/plugin-startup.md.)
 *
 * @example
 * ```ts
 * const client = createHttpClient({ tls: { caPem }, timeoutMs: 10_000 });
 * try {
 *   const response = await client.send({ method: 'GET', url: 'https://issuer.example/.well-known/openid-configuration' });
 *   response.json; // parsed when the answer says it is JSON
 * } catch (error) {
 *   if (isHttpFailure(error) && error.kind === 'timeout') ...; // map to the caller's own code
 * } finally {
 *   await client.close();
 * }
 * ```
 */
export {
  type HttpClient,
  type HttpClientOptions,
  type HttpRetryPolicy,
  type HttpSendOptions,
  createHttpClient,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_TIMEOUT_MS,
} from './http/client.js';
export type { HttpRequest, HttpResponse } from './http/exchange.js';
export { HttpFailure, type HttpFailureKind, isHttpFailure } from './http/failures.js';
export type { ProxyOptions } from './http/route.js';
export { type NodeTlsOptions, nodeTlsOptions, type TlsOptions } from './http/tls.js';
export { parseHttpUrl, requestUrl } from './http/url.js';
