/**
 * The network seam (STYLE 2, 10): sends a protocol {@link HttpRequest} through an undici dispatcher that trusts
 * exactly the configured issuer CA (or the system roots when none is configured), and translates undici's and
 * node's errors (`UND_ERR_*`, `ECONNREFUSED`, TLS codes) into `ERR_OIDC_ISSUER_UNREACHABLE` in one place.
 */
import { Agent, EnvHttpProxyAgent, request, type Dispatcher } from 'undici';
import { CredentialsError, isCredentialsError } from '../../core/errors.js';
import type { HttpRequest, HttpResponse } from './protocol.js';

export type Send = (request: HttpRequest) => Promise<HttpResponse>;

/**
 * A dispatcher trusting `caPem` only (or the default roots), with bounded connect and response times; through
 * `proxy.httpsProxy` (an HTTP CONNECT tunnel) unless `proxy.noProxy` exempts the issuer's host.
 */
export function issuerDispatcher(caPem: string | undefined, proxy: { httpsProxy: string | undefined; noProxy: string | undefined } = { httpsProxy: undefined, noProxy: undefined }): Dispatcher {
  const tls = caPem === undefined ? {} : { ca: caPem };
  const options = { connect: { ...tls, timeout: 10_000 }, headersTimeout: 30_000, bodyTimeout: 30_000 };
  if (proxy.httpsProxy === undefined) return new Agent(options);
  // Every value given explicitly: undici would otherwise fall back to process.env (STYLE 3).
  return new EnvHttpProxyAgent({ ...options, requestTls: tls, httpProxy: proxy.httpsProxy, httpsProxy: proxy.httpsProxy, noProxy: proxy.noProxy ?? '' });
}

/** Largest response body we read (discovery, JWKS and token responses are small). */
const MAX_BODY = 1024 * 1024;

export function createSend(dispatcher: Dispatcher, signal?: AbortSignal): Send {
  return async (req) => {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(req.url, {
        method: req.method,
        headers: req.headers,
        ...(req.body === undefined ? {} : { body: req.body }),
        dispatcher,
        ...(signal === undefined ? {} : { signal }),
      });
    } catch (error) {
      throw unreachable(req.url, error);
    }
    let body = '';
    try {
      for await (const chunk of response.body) {
        body += (chunk as Buffer).toString('utf8');
        if (body.length > MAX_BODY) {
          response.body.destroy();
          throw new CredentialsError('ERR_OIDC_DISCOVERY', `the response from ${req.url} is larger than 1 MiB`, { path: req.url });
        }
      }
    } catch (error) {
      if (isCredentialsError(error)) throw error;
      throw unreachable(req.url, error);
    }
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
    return { status: response.statusCode, headers, body };
  };
}

function unreachable(url: string, error: unknown): CredentialsError {
  const code = (error as { code?: unknown }).code;
  const detail = typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
  const tls = typeof code === 'string' && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code);
  return new CredentialsError('ERR_OIDC_ISSUER_UNREACHABLE', `cannot reach the issuer at ${url}: ${detail}${error instanceof Error && detail !== error.message ? ` (${error.message})` : ''}`, {
    path: url,
    hint: tls
      ? 'the issuer\'s certificate is not trusted: set issuerCA in spec.cluster.config to base64 of the CA that signed it'
      : 'check issuerURL, the network path to the issuer, and proxies',
    cause: error,
  });
}
