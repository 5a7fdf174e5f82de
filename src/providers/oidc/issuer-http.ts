/**
 * Sends the protocol's {@link HttpRequest}s to the OpenID Provider through the HTTP seam (src/base/http.ts):
 * trusting exactly the configured issuer CA (or the system roots when none is configured), through HTTPS_PROXY
 * unless NO_PROXY exempts the issuer, each request bounded by one deadline. Failures become
 * `ERR_OIDC_ISSUER_UNREACHABLE` here.
 */
import { CredentialsError } from '../../base/errors.js';
import { createHttpClient, isHttpFailure, type HttpFailure } from '../../base/http.js';
import type { HttpRequest, HttpResponse } from './protocol.js';

export type Send = (request: HttpRequest) => Promise<HttpResponse>;

/** Largest response body we read (discovery, JWKS and token responses are small). */
const MAX_BODY_BYTES = 1024 * 1024;

/** Form parameters that are credentials: an error answer quoting one back has it redacted. */
const SECRET_PARAMS = [
  'client_secret',
  'client_assertion',
  'subject_token',
  'actor_token',
  'refresh_token',
  'device_code',
  'code_verifier',
  'password',
];

function secretsOf(request: HttpRequest): string[] {
  const secrets: string[] = [];
  const basic = /^Basic\s+(\S+)/i.exec(request.headers['authorization'] ?? request.headers['Authorization'] ?? '');
  if (basic !== null) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    secrets.push(basic[1]!, decoded.slice(decoded.indexOf(':') + 1));
  }
  if (request.body !== undefined) {
    const form = new URLSearchParams(request.body);
    for (const name of SECRET_PARAMS) secrets.push(...form.getAll(name));
  }
  return secrets.filter((secret) => secret.length >= 8);
}

function unreachable(failure: HttpFailure): CredentialsError {
  const tls = failure.kind === 'certificate' || failure.kind === 'tls';
  return new CredentialsError(
    'ERR_OIDC_ISSUER_UNREACHABLE',
    `cannot reach the issuer at ${failure.url}: ${failure.message}`,
    {
      path: failure.url,
      hint: tls
        ? "the issuer's certificate is not trusted: set issuerCA in spec.cluster.config to base64 of the CA that signed it"
        : 'check issuerURL, the network path to the issuer, and proxies',
      cause: failure,
    },
  );
}

/**
 * A sender to the issuer; close it when done.
 *
 * @example
 * ```ts
 * const issuer = createIssuerSend({ issuerCA, proxy: { httpsProxy: undefined, noProxy: undefined }, timeoutMs: 30_000 }, signal);
 * try { processDiscoveryResponse(url, await issuer.send(discoveryRequest(url))); } finally { await issuer.close(); }
 * ```
 */
export function createIssuerSend(
  options: {
    issuerCA: string | undefined;
    proxy: { httpsProxy: string | undefined; noProxy: string | undefined };
    timeoutMs: number;
  },
  signal?: AbortSignal,
): { send: Send; close(): Promise<void> } {
  const client = createHttpClient({
    tls: options.issuerCA === undefined ? {} : { caPem: options.issuerCA },
    ...(options.proxy.httpsProxy === undefined
      ? {}
      : { proxy: { url: options.proxy.httpsProxy, noProxy: options.proxy.noProxy ?? '' } }),
    timeoutMs: options.timeoutMs,
    maxResponseBytes: MAX_BODY_BYTES,
  });
  const send: Send = async (req) => {
    try {
      const response = await client.send(
        {
          method: req.method,
          url: req.url,
          headers: req.headers,
          ...(req.body === undefined ? {} : { body: req.body }),
          secrets: secretsOf(req),
        },
        signal === undefined ? {} : { signal },
      );
      return { status: response.status, headers: response.headers, body: response.text };
    } catch (error) {
      if (!isHttpFailure(error)) throw error;
      if (error.kind === 'too-large') {
        throw new CredentialsError('ERR_OIDC_DISCOVERY', `the response from ${error.url} is larger than 1 MiB`, {
          path: error.url,
          cause: error,
        });
      }
      throw unreachable(error);
    }
  };
  return { send, close: () => client.close() };
}
