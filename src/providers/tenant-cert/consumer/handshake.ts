/**
 * The consumer's client of the tenant-cert issuer: one handshake (signed nonce request → nonce → Tenant → Identity) over HTTPS that
 * trusts only the issuer's CA, retried as a whole — with a fresh nonce — when the issuer is down, slow, answers 5xx
 * or the nonce went stale, inside one overall deadline. Requests are built and responses processed by the pure
 * functions of src/wire/tenant-cert/protocol.ts (conventions: build, send, process); this module is the seam in between.
 *
 * @example
 * ```ts
 * const { identity, clockOffsetMs } = await issuerHandshake(
 *   { issuerURL: 'https://issuer:8443', issuerCA: pem, timeoutMs: 30_000, now: () => new Date() },
 *   { consumerClusterID: 'c1', providerClusterID: 'p1' },
 *   {
 *     // both sign with the cluster key, which stays with the caller
 *     nonceRequest: (at) => signNonceRequest(privateKey, { consumerClusterID: 'c1', providerClusterID: 'p1' }, at),
 *     tenant: async (nonce) => makeTenant(nonce), // also builds the CSR
 *   },
 * );
 * ```
 */
import { CredentialsError, isCredentialsError } from '../../../base/errors.js';
import {
  buildNonceRequest,
  buildTenantRequest,
  errorFromResponse,
  isRetryableStatus,
  processIdentityResponse,
  processNonceResponse,
  type HttpRequestSpec,
  type IdentityDocument,
  type NonceRequest,
  type NonceResponse,
  type TenantDocument,
} from '../../../wire/tenant-cert/protocol.js';
import type { HttpClient } from '../../../base/http.js';
import {
  issuerClient,
  retryableError,
  sendIssuerRequest,
  withRetries,
  type IssuerRequest,
  type IssuerResponse,
} from './transport.js';

export interface IssuerClientOptions {
  /** https base URL, without a trailing slash. */
  issuerURL: string;
  /** PEM of the CA(s) trusted for the issuer's HTTPS: the only roots used. */
  issuerCA: string;
  /** Overall deadline for the whole handshake, retries included (ms). */
  timeoutMs: number;
  /** Bound of one HTTP exchange (ms); default 10 s, never beyond the overall deadline. */
  requestTimeoutMs?: number;
  now(): Date;
  signal?: AbortSignal;
  /** Default: {@link issuerClient}(issuerCA). Tests pass their own (still verifying TLS). */
  client?: HttpClient;
  /** A diagnostics line (stderr) per retry. */
  log?(line: string): void;
  /** Backoff knobs (tests). */
  initialBackoffMs?: number;
  maxAttempts?: number;
}

export interface HandshakeResult {
  nonce: NonceResponse;
  identity: IdentityDocument;
  /** The issuer's clock minus ours (ms), from its `Date` header; 0 when absent. */
  clockOffsetMs: number;
  attempts: number;
}

/** Builds the absolute request from a protocol request spec. */
export function toIssuerRequest(issuerURL: string, spec: HttpRequestSpec): IssuerRequest {
  return {
    method: spec.method,
    url: new URL(`${issuerURL.replace(/\/+$/, '')}${spec.path}`),
    headers: { ...spec.headers, 'user-agent': 'clusterprofile-tenant-cert' },
    ...(spec.body === undefined ? {} : { body: spec.body }),
  };
}

/** The issuer's clock minus `receivedAt` (ms), from the `Date` header; 0 when absent or unparseable. */
export function clockOffset(response: IssuerResponse, receivedAt: Date): number {
  const header = response.headers['date'];
  const value = Array.isArray(header) ? header[0] : header;
  const issuerTime = value === undefined ? Number.NaN : Date.parse(value);
  return Number.isFinite(issuerTime) ? issuerTime - receivedAt.getTime() : 0;
}

/**
 * 5xx / 429 become retryable errors: the issuer's own code when the registry marks it retryable, else
 * ERR_TENANT_CERT_ISSUER_ERROR naming it (no error document, a code of the issuer's own trouble, an unknown code).
 * Everything else goes to the processor.
 */
function rejectTransient(response: IssuerResponse): void {
  if (!isRetryableStatus(response.status)) {
    return;
  }
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    body = undefined;
  }
  const error = errorFromResponse(response.status, body);
  if (error.retryable) {
    throw new CredentialsError(error.code, error.message, {
      path: response.url,
      ...(error.hint === undefined ? {} : { hint: error.hint }),
      cause: error,
    });
  }
  const said = body !== null && typeof body === 'object' ? (body as { message?: unknown }).message : undefined;
  const detail = error.code === 'ERR_ISSUER_RESPONSE' ? '' : ` with ${error.code}: ${String(said)}`;
  throw retryableError('ERR_TENANT_CERT_ISSUER_ERROR', `the issuer answered HTTP ${response.status}${detail}`, {
    path: response.url,
    ...(error.hint === undefined ? {} : { hint: error.hint }),
    cause: error,
  });
}

/** A processor's error, with the URL as its path when it has none (stale-nonce codes are retryable by the registry). */
function annotate(error: unknown, url: string): never {
  if (isCredentialsError(error)) {
    if (error.path === undefined) {
      throw new CredentialsError(error.code, error.message, {
        path: url,
        ...(error.hint === undefined ? {} : { hint: error.hint }),
        cause: error.cause,
      });
    }
  }
  throw error;
}

/** The documents only the key holder can make; the private key never reaches this module. */
export interface HandshakeSigner {
  /** The signed nonce request, timestamped `at` (our clock corrected by the issuer's, once known). */
  nonceRequest(at: Date): NonceRequest;
  /** The signed Tenant for a fresh nonce. */
  tenant(nonce: NonceResponse): Promise<TenantDocument> | TenantDocument;
}

/**
 * Runs the handshake. Non-retryable refusals (unknown consumer, untrusted key, bad signature...) are thrown at once
 * with the issuer's code. A nonce request refused as stale (our clock is more than 5 minutes off the issuer's) is
 * signed again, once per attempt, at the issuer's time taken from its answer's `Date` header.
 */
export async function issuerHandshake(
  options: IssuerClientOptions,
  ids: { consumerClusterID: string; providerClusterID: string },
  signer: HandshakeSigner,
): Promise<HandshakeResult> {
  const client = options.client ?? issuerClient(options.issuerCA, options.timeoutMs);
  const nowMs = () => options.now().getTime();
  const deadline = nowMs() + options.timeoutMs;
  const perRequest = options.requestTimeoutMs ?? 10_000;
  // The issuer's clock minus ours, as last measured (0 until an answer says otherwise).
  let issuerOffsetMs = 0;
  try {
    return await withRetries(
      async (remaining, number) => {
        const signed = signer.nonceRequest(new Date(nowMs() + issuerOffsetMs));
        const nonceRequest = toIssuerRequest(options.issuerURL, buildNonceRequest(signed));
        const nonceResponse = await sendIssuerRequest(nonceRequest, {
          client,
          timeoutMs: Math.min(perRequest, remaining),
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        });
        const clockOffsetMs = clockOffset(nonceResponse, options.now());
        issuerOffsetMs = clockOffsetMs;
        rejectTransient(nonceResponse);
        let nonce: NonceResponse;
        try {
          nonce = processNonceResponse(nonceResponse, ids);
        } catch (error) {
          annotate(error, nonceResponse.url);
        }
        const tenant = await signer.tenant(nonce);
        const tenantRequest = toIssuerRequest(options.issuerURL, buildTenantRequest(tenant));
        const left = deadline - nowMs();
        if (left <= 0) {
          throw retryableError('ERR_TENANT_CERT_ISSUER_TIMEOUT', 'the issuer did not answer in time', {
            path: tenantRequest.url.href,
          });
        }
        const identityResponse = await sendIssuerRequest(tenantRequest, {
          client,
          timeoutMs: Math.min(perRequest, left),
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        });
        rejectTransient(identityResponse);
        let identity: IdentityDocument;
        try {
          identity = processIdentityResponse(identityResponse);
        } catch (error) {
          annotate(error, identityResponse.url);
        }
        return { nonce, identity, clockOffsetMs, attempts: number };
      },
      {
        deadline,
        now: nowMs,
        ...(options.initialBackoffMs === undefined ? {} : { initialBackoffMs: options.initialBackoffMs }),
        ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        onRetry(error, number, waitMs) {
          options.log?.(
            `clusterprofile-tenant-cert: attempt ${number} failed (${error.code}: ${error.message}); retrying in ${waitMs} ms`,
          );
        },
      },
    );
  } finally {
    if (options.client === undefined) {
      await client.close();
    }
  }
}
