/**
 * A thin Kubernetes REST transport over undici: TLS verified against the endpoint's CA (never the environment's
 * proxy: only an explicit `proxyUrl`), the credential applied, JSON in and out. Network failures become
 * `ERR_KUBE_UNREACHABLE` naming the server; HTTP statuses are returned for the protocol layer to judge.
 */
import { Agent, ProxyAgent, request as undiciRequest, type Dispatcher } from 'undici';
import { CredentialsError } from '../core/errors.js';
import type { KubeCredential, KubeEndpoint, KubeRequest, SendKubeRequest } from './types.js';

/** Largest response body read (TokenRequest and CSR answers are a few kB); more is refused, not buffered. */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

export interface KubeTransportOptions {
  /** Per request, including the body (default 30 s). */
  timeoutMs?: number;
  /** Default {@link DEFAULT_MAX_RESPONSE_BYTES}. */
  maxResponseBytes?: number;
}

function dispatcherFor(endpoint: KubeEndpoint, credential: KubeCredential): Dispatcher {
  const connect = {
    ...(endpoint.caPem === undefined ? {} : { ca: endpoint.caPem }),
    ...(endpoint.tlsServerName === undefined ? {} : { servername: endpoint.tlsServerName }),
    rejectUnauthorized: endpoint.insecureSkipTlsVerify !== true,
    ...(credential.kind === 'certificate' ? { cert: credential.certificatePem, key: credential.keyPem } : {}),
  };
  if (endpoint.proxyUrl !== undefined) {
    return new ProxyAgent({ uri: endpoint.proxyUrl, requestTls: connect });
  }
  return new Agent({ connect });
}

function parseServer(server: string): URL {
  let url: URL;
  try {
    url = new URL(server);
  } catch (cause) {
    throw new CredentialsError('ERR_KUBE_ENDPOINT', `the API server URL ${JSON.stringify(server)} is not a URL`, { path: server, cause });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new CredentialsError('ERR_KUBE_ENDPOINT', `the API server URL ${server} must be https`, { path: server });
  }
  return url;
}

/**
 * A function that sends {@link KubeRequest}s to one API server as one identity. Close the returned `close` when done.
 *
 * @example
 * ```ts
 * const kube = createKubeTransport({ server, caPem }, { kind: 'token', token });
 * const response = await kube.send({ method: 'GET', path: '/version' });
 * await kube.close();
 * ```
 */
export function createKubeTransport(
  endpoint: KubeEndpoint,
  credential: KubeCredential,
  options: KubeTransportOptions = {},
): { send: SendKubeRequest; close(): Promise<void> } {
  const base = parseServer(endpoint.server);
  const dispatcher = dispatcherFor(endpoint, credential);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const basePath = base.pathname.replace(/\/+$/, '');

  const send: SendKubeRequest = async (request, { signal } = {}) => {
    const url = new URL(base);
    const [pathname, query] = request.path.split('?', 2) as [string, string | undefined];
    url.pathname = basePath + pathname;
    url.search = query === undefined ? '' : `?${query}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (credential.kind === 'token') {
      headers['authorization'] = `Bearer ${credential.token}`;
    }
    let body: string | undefined;
    if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers['content-type'] = request.contentType ?? 'application/json';
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    let tooLarge = false;
    try {
      const response = await undiciRequest(url, {
        method: request.method,
        headers,
        body,
        dispatcher,
        signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body) {
        size += (chunk as Buffer).length;
        if (size > maxResponseBytes) {
          tooLarge = true;
          response.body.destroy();
          break;
        }
        chunks.push(chunk as Buffer);
      }
      if (tooLarge) {
        throw new CredentialsError('ERR_KUBE_RESPONSE_TOO_LARGE', `the API server ${endpoint.server} answered ${request.method} ${pathname} with more than ${maxResponseBytes} bytes`, {
          path: endpoint.server,
        });
      }
      let text = Buffer.concat(chunks).toString('utf8');
      if (response.statusCode >= 300 && credential.kind === 'token' && credential.token !== '') {
        // An error answer is only ever shown to people: never let it carry our own bearer token back into a message
        // (auth proxies and debug endpoints repeat the credential they refused).
        text = text.replaceAll(credential.token, '[REDACTED]');
      }
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // Not JSON: the protocol layer reports the raw text.
      }
      return { status: response.statusCode, body: parsed };
    } catch (cause) {
      if (tooLarge) throw cause;
      const reason = timeout.aborted ? `no answer within ${timeoutMs} ms` : describeNetworkError(cause);
      throw new CredentialsError('ERR_KUBE_UNREACHABLE', `cannot reach the API server ${endpoint.server}: ${reason}`, {
        path: endpoint.server,
        cause,
      });
    }
  };
  return { send, close: () => dispatcher.close() };
}

/** undici and TLS errors carry codes (`UND_ERR_*`, `ECONNREFUSED`, `UNABLE_TO_VERIFY_LEAF_SIGNATURE`): keep them. */
function describeNetworkError(error: unknown): string {
  const seen: string[] = [];
  let current: unknown = error;
  while (current instanceof Error && seen.length < 4) {
    const code = (current as { code?: unknown }).code;
    seen.push(typeof code === 'string' ? `${current.message} (${code})` : current.message);
    current = current.cause;
  }
  return seen.filter((part, index) => index === 0 || !seen[0]!.includes(part)).join(': ') || String(error);
}
