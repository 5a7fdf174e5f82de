/**
 * The Kubernetes REST transport: an adapter over the HTTP seam (src/base/http.ts) that applies the credential,
 * sends JSON and reads JSON. TLS is verified against the endpoint's CA; a proxy only when the endpoint names one
 * (never the environment's). Network failures become `ERR_KUBE_UNREACHABLE` naming the server; HTTP statuses are
 * returned for the protocol layer to judge.
 */
import { connectionHttpOptions } from '../base/cluster-connection.js';
import { CredentialsError } from '../base/errors.js';
import { createHttpClient, isHttpFailure, parseHttpUrl, type HttpFailure, type HttpRetryPolicy } from '../base/http.js';
import type { KubeCredential, KubeEndpoint, KubeRequest, SendKubeRequest } from './types.js';

/** Largest response body read (TokenRequest and CSR answers are a few kB); more is refused, not buffered. */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/** Retries for transient failures (unreachable, 429, 5xx) as the plugins use them: 3 attempts, 200 ms then 400 ms. */
export const KUBE_RETRY: HttpRetryPolicy = { attempts: 3, baseDelayMs: 200 };

export interface KubeTransportOptions {
  /** Deadline of one send — connect, TLS, request and answer, retries included (default 30 s). */
  timeoutMs?: number;
  /** Default {@link DEFAULT_MAX_RESPONSE_BYTES}. */
  maxResponseBytes?: number;
  /** Default: one attempt. */
  retry?: HttpRetryPolicy;
}

function endpointError(failure: HttpFailure): CredentialsError {
  return new CredentialsError('ERR_KUBE_ENDPOINT', failure.message, { path: failure.target, cause: failure });
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
  try {
    parseHttpUrl(endpoint.server, 'the API server URL');
  } catch (error) {
    throw isHttpFailure(error) ? endpointError(error) : error;
  }
  const client = createHttpClient({
    ...connectionHttpOptions(
      endpoint,
      credential.kind === 'certificate' ? { certPem: credential.certificatePem, keyPem: credential.keyPem } : undefined,
    ),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    ...(options.retry === undefined ? {} : { retry: options.retry }),
  });

  const send: SendKubeRequest = async (request, { signal, timeoutMs } = {}) => {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (credential.kind === 'token') {
      headers['authorization'] = `Bearer ${credential.token}`;
    }
    try {
      const response = await client.send(
        {
          method: request.method,
          base: endpoint.server,
          url: request.path,
          headers,
          ...(request.body === undefined
            ? {}
            : { json: request.body, contentType: request.contentType ?? 'application/json' }),
          ...(request.onChunk === undefined ? {} : { onChunk: request.onChunk }),
        },
        { ...(signal === undefined ? {} : { signal }), ...(timeoutMs === undefined ? {} : { timeoutMs }) },
      );
      let body: unknown = response.text;
      try {
        body = JSON.parse(response.text);
      } catch {
        // Not JSON: the protocol layer reports the raw text.
      }
      return { status: response.status, body };
    } catch (error) {
      if (!isHttpFailure(error)) throw error;
      if (error.kind === 'url') throw endpointError(error);
      if (error.kind === 'too-large') {
        const pathname = request.path.split('?', 1)[0];
        throw new CredentialsError(
          'ERR_KUBE_RESPONSE_TOO_LARGE',
          `the API server ${error.target} answered ${request.method} ${pathname} with more than ${error.limit} bytes`,
          {
            path: error.target,
            cause: error,
          },
        );
      }
      throw new CredentialsError(
        'ERR_KUBE_UNREACHABLE',
        `cannot reach the API server ${error.target}: ${error.message}`,
        {
          path: error.target,
          cause: error,
        },
      );
    }
  };
  return { send, close: () => client.close() };
}
