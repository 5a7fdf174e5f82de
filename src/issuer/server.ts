/**
 * The issuer's HTTPS front: routes, body limits, JSON in and out, errors as `{code, message, path?, hint?}` with the
 * status the error registry gives its code (500 when it gives none); the operational endpoints (`/healthz` liveness,
 * `/readyz` readiness, `/metrics` Prometheus text) and the graceful stop. The logic lives in ./issuer.ts.
 */
import type { BackgroundLoops } from './background.js';
import { createServer, type Server } from 'node:https';
import {
  createServer as createPlainServer,
  type IncomingMessage,
  type Server as PlainServer,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { readStreamBounded } from '../base/bounded-read.js';
import { parseDocument } from '../base/document.js';
import { ERRORS, errorSpec, isCredentialsError } from '../base/errors.js';
import { isClusterId } from '../wire/tenant-cert/cluster-id.js';
import { API_PATHS, MAX_BODY_BYTES, tenantError, type ErrorResponse } from '../wire/tenant-cert/protocol.js';
import type { ServingMaterial } from './state/issuer-cas.js';
import { servedCertificate, watchServingFiles, type ServingFilesWatch } from './serving-files.js';
import { describe, type Issuer } from './issuer.js';
import type { HandshakeStep, IssuerMetrics } from './metrics.js';

/** The operational paths beside the API's ({@link API_PATHS}). */
export const OPS_PATHS = { readyz: '/readyz', metrics: '/metrics' } as const;

/**
 * One condition of readiness (the state backend reachable, the data dir still ours): resolves when it holds, throws
 * (a CredentialsError, ideally) when not. It must stop when `signal` aborts; it is given up on then anyway.
 */
export interface ReadinessCheck {
  /** A short name shown in the /readyz answer and the log (`state`, `data-dir`). */
  name: string;
  check(signal: AbortSignal): Promise<void>;
}

/** One answered handshake request, for a structured log (never a nonce, a key, a signature or a certificate). */
export interface HandshakeLogEntry {
  step: HandshakeStep;
  status: number;
  /** The error code answered; absent when the request succeeded. */
  code?: string;
  /** The consumer cluster ID the request names, when it is a well-formed cluster ID. */
  consumer?: string;
  durationMs: number;
  /** For an error: `CODE: message (at path)`, one line, with the details the client is not told. */
  detail?: string;
  /** For an issued certificate: its notAfter. */
  validUntil?: string;
}

export interface IssuerServerOptions {
  issuer: Issuer;
  tls: ServingMaterial;
  host: string;
  /** 0: any free port. */
  port: number;
  log?(line: string): void;
  /** Called once per answered handshake request (structured logs). */
  logHandshake?(entry: HandshakeLogEntry): void;
  /** Every check must pass for /readyz to answer 200 (the serving material is loaded once the server runs). */
  readinessChecks?: readonly ReadinessCheck[];
  /**
   * The background loops (./background.ts): the serving-pair reload registers and reports there, and every loop
   * registered — now or later — is a readiness check of its own (`background:<loop>`).
   */
  background?: BackgroundLoops;
  /** How long one readiness check may take before it counts as failed (default 2 s). */
  readinessTimeoutMs?: number;
  /** Counters and histograms to record into and serve on /metrics; without it /metrics answers ERR_ISSUER_NOT_FOUND. */
  metrics?: IssuerMetrics;
  /**
   * The files `tls` was read from (`--tls-cert-file`/`--tls-key-file`): polled every `intervalMs`, a new pair that
   * passes the start-up checks is served to new connections; a bad one is logged and the served pair kept.
   */
  servingFiles?: { certFile: string; keyFile: string; cwd: string; intervalMs: number };
}

/** What a graceful stop did. */
export interface ClosedIssuer {
  /** Requests that were being handled when the stop began. */
  inFlight: number;
  /** Requests still unanswered when the grace period ended (their connections were cut). */
  cut: number;
}

export interface RunningIssuer {
  url: string;
  port: number;
  server: Server;
  /**
   * Stops accepting connections, fails /readyz, lets requests in flight finish (up to `graceMs`, default 5 s; keep-alive
   * connections are closed after their current answer), then cuts what is left.
   */
  close(graceMs?: number): Promise<ClosedIssuer>;
  /** The outcome of the checks now (what GET /readyz answers). */
  readiness(): Promise<Readiness>;
}

export interface Readiness {
  ready: boolean;
  /** Per check: `ok`, or the error code it failed with (`ERR_ISSUER_NOT_READY` for a timeout). */
  checks: Record<string, string>;
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(text);
}

/**
 * Codes whose message, path and hint a client may read: they are about the request it sent (its document, nonce,
 * signature, CSR) and quote nothing but that and the issuer's public policy. Every other error (the data dir, a
 * trust record, the signer, the Kubernetes API server, anything unexpected) is answered with its code and a generic
 * message only: the answer goes to unauthenticated clients, the details go to the issuer's log.
 */
const CLIENT_FACING: ReadonlySet<string> = new Set(
  Object.keys(ERRORS)
    .filter((code) => code.startsWith('ERR_TENANT_') && errorSpec(code)?.http !== undefined)
    .concat([
      'ERR_ISSUER_NOT_FOUND',
      'ERR_ISSUER_METHOD_NOT_ALLOWED',
      'ERR_ISSUER_BODY_TOO_LARGE',
      'ERR_ISSUER_UNSUPPORTED_MEDIA_TYPE',
      'ERR_ISSUER_BUSY',
      'ERR_ISSUER_NOT_READY',
    ]),
);

/** What a client is told for a code that is not {@link CLIENT_FACING}. */
const GENERIC_MESSAGES: Readonly<Record<string, string>> = {
  ERR_ISSUER_SIGNER_FAILED: 'the certificate signer failed; try again later (details in the issuer log)',
  ERR_ISSUER_SIGNER_DENIED: 'the certificate signer refused to sign (details in the issuer log)',
  ERR_ISSUER_SIGNER_TIMEOUT: 'the certificate signer did not answer in time; try again later',
  ERR_ISSUER_STATE_UNAVAILABLE: "the issuer's state store is unavailable; try again later",
  ERR_ISSUER_STATE_FORBIDDEN:
    "the issuer's state store refused the issuer; try again later (details in the issuer log)",
};
const GENERIC_MESSAGE = 'internal error (details in the issuer log)';

/** The answer a client gets for an error: see {@link CLIENT_FACING}. */
export function errorAnswer(error: unknown): { status: number; body: ErrorResponse } {
  if (isCredentialsError(error) && CLIENT_FACING.has(error.code)) {
    return {
      status: error.httpStatus ?? 500,
      body: {
        code: error.code,
        message: error.message,
        // JSON paths into the request only (a file path is never sent).
        ...(error.path?.startsWith('$') === true ? { path: error.path } : {}),
        ...(error.hint === undefined ? {} : { hint: error.hint }),
      },
    };
  }
  if (isCredentialsError(error) && /^ERR_[A-Z0-9_]+$/.test(error.code)) {
    const status = error.httpStatus ?? 500;
    return { status, body: { code: error.code, message: GENERIC_MESSAGES[error.code] ?? GENERIC_MESSAGE } };
  }
  return { status: 500, body: { code: 'ERR_ISSUER_INTERNAL', message: GENERIC_MESSAGE } };
}

function sendError(response: ServerResponse, error: unknown, log?: (line: string) => void): void {
  if (!isCredentialsError(error)) {
    log?.(
      `internal error: ${(error instanceof Error ? (error.stack ?? error.message) : String(error)).replace(/[\r\n]+\s*/g, ' | ')}`,
    );
  }
  const { status, body } = errorAnswer(error);
  send(response, status, body);
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw tenantError('ERR_ISSUER_UNSUPPORTED_MEDIA_TYPE', 'send the document as content-type: application/json');
  }
  const declared = Number(request.headers['content-length'] ?? '0');
  if (declared > MAX_BODY_BYTES) {
    throw tenantError('ERR_ISSUER_BODY_TOO_LARGE', `the body is larger than ${MAX_BODY_BYTES} bytes`);
  }
  let text: string;
  try {
    text = await readStreamBounded(request, 'the body', MAX_BODY_BYTES);
  } catch (error) {
    // A body that declared less (or nothing) and sent more: the same answer as one that declared too much.
    if ((error as NodeJS.ErrnoException | null)?.code === 'EFBIG') {
      throw tenantError('ERR_ISSUER_BODY_TOO_LARGE', `the body is larger than ${MAX_BODY_BYTES} bytes`);
    }
    throw error;
  }
  // `$`: the error's path, which the answer carries (JSON paths into the request only).
  return parseDocument(text, {
    source: '$',
    code: 'ERR_TENANT_INVALID_DOCUMENT',
    format: 'json',
    message: 'the body is not JSON',
    maxBytes: MAX_BODY_BYTES,
  });
}

const ROUTES: Readonly<Record<string, string>> = {
  [API_PATHS.nonces]: 'POST',
  [API_PATHS.tenants]: 'POST',
  [API_PATHS.healthz]: 'GET',
  [OPS_PATHS.readyz]: 'GET',
  [OPS_PATHS.metrics]: 'GET',
};

/** The consumer a handshake body names, if it is a well-formed cluster ID (nothing else reaches a log line). */
function consumerOf(step: HandshakeStep, body: unknown): string | undefined {
  const record = body as { consumerClusterID?: unknown; spec?: { clusterID?: unknown } } | null | undefined;
  const id = step === 'nonce' ? record?.consumerClusterID : record?.spec?.clusterID;
  return isClusterId(id) ? id : undefined;
}

/** Runs `check` with a deadline; resolves `ok` or the code it failed with. */
async function runCheck(check: ReadinessCheck, timeoutMs: number, log?: (line: string) => void): Promise<string> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = tenantError(
        'ERR_ISSUER_NOT_READY',
        `readiness check ${check.name} took longer than ${timeoutMs} ms`,
      );
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    await Promise.race([check.check(controller.signal), deadline]);
    return 'ok';
  } catch (error) {
    log?.(`readiness check ${check.name} failed: ${describe(error)}`);
    return isCredentialsError(error) ? error.code : 'ERR_ISSUER_INTERNAL';
  } finally {
    clearTimeout(timer);
  }
}

/** Starts the HTTPS server; resolves once it listens. */
export async function startIssuerServer(options: IssuerServerOptions): Promise<RunningIssuer> {
  const { issuer, log, metrics, logHandshake } = options;
  const checks = options.readinessChecks ?? [];
  const readinessTimeoutMs = options.readinessTimeoutMs ?? 2000;
  let closing = false;
  let lastReady = false;
  let inFlight = 0;

  async function readiness(): Promise<Readiness> {
    if (closing) {
      lastReady = false;
      return { ready: false, checks: { serving: 'ERR_ISSUER_NOT_READY' } };
    }
    const all = [...checks, ...(options.background?.readinessChecks() ?? [])];
    const results = await Promise.all(all.map((check) => runCheck(check, readinessTimeoutMs, log)));
    const answer: Record<string, string> = { serving: 'ok' };
    for (const [index, check] of all.entries()) answer[check.name] = results[index] ?? 'ERR_ISSUER_INTERNAL';
    lastReady = !closing && results.every((result) => result === 'ok');
    return { ready: lastReady, checks: answer };
  }
  metrics?.setReadySource(() => lastReady);

  async function answerReadyz(response: ServerResponse): Promise<void> {
    const result = await readiness();
    if (result.ready) {
      send(response, 200, { status: 'ready', checks: result.checks });
      return;
    }
    const failing = Object.entries(result.checks)
      .filter(([, outcome]) => outcome !== 'ok')
      .map(([name]) => name);
    send(response, 503, {
      code: 'ERR_ISSUER_NOT_READY',
      message: closing ? 'the issuer is shutting down' : `not ready: ${failing.join(', ')} (details in the issuer log)`,
      checks: result.checks,
    });
  }

  async function answerMetrics(response: ServerResponse): Promise<void> {
    if (metrics === undefined) {
      sendError(
        response,
        tenantError('ERR_ISSUER_NOT_FOUND', `no such path ${OPS_PATHS.metrics}`, {
          hint: 'this issuer serves no metrics here',
        }),
      );
      return;
    }
    const text = await metrics.text();
    response.writeHead(200, {
      'content-type': metrics.contentType,
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
    });
    response.end(text);
  }

  async function handshake(step: HandshakeStep, request: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = performance.now();
    let body: unknown;
    let status = 201;
    let code: string | undefined;
    let detail: string | undefined;
    let validUntil: string | undefined;
    try {
      body = await readJson(request);
      if (step === 'nonce') {
        send(response, 201, await issuer.issueNonce(body));
      } else {
        const accepted = await issuer.acceptTenant(body);
        send(response, 201, accepted.identity);
        metrics?.certificateIssued(issuer.options.signer.name);
        if (logHandshake !== undefined) validUntil = accepted.notAfter.toISOString();
      }
    } catch (error) {
      const answer = errorAnswer(error);
      status = answer.status;
      code = answer.body.code;
      if (logHandshake !== undefined) detail = describe(error);
      if (!response.headersSent) {
        if (isCredentialsError(error) && error.code === 'ERR_ISSUER_BODY_TOO_LARGE') {
          response.setHeader('connection', 'close');
        }
        sendError(response, error, log);
      }
    }
    const seconds = (performance.now() - started) / 1000;
    metrics?.handshake(step, seconds, status, code);
    if (logHandshake !== undefined) {
      const consumer = consumerOf(step, body);
      logHandshake({
        step,
        status,
        durationMs: Math.round(seconds * 1e6) / 1000,
        ...(code === undefined ? {} : { code }),
        ...(consumer === undefined ? {} : { consumer }),
        ...(detail === undefined ? {} : { detail }),
        ...(validUntil === undefined ? {} : { validUntil }),
      });
    }
  }

  const server = createServer(
    { cert: options.tls.certificatePem, key: options.tls.keyPem, minVersion: 'TLSv1.2' },
    (request, response) => {
      const path = (request.url ?? '/').split('?')[0] ?? '/';
      const method = ROUTES[path];
      if (closing) {
        // Draining: answer, then close the connection (the listener is already closed).
        response.setHeader('connection', 'close');
      }
      if (method === undefined) {
        sendError(
          response,
          tenantError('ERR_ISSUER_NOT_FOUND', `no such path ${path}`, {
            hint: `the API: POST ${API_PATHS.nonces}, POST ${API_PATHS.tenants}, GET ${API_PATHS.healthz}, GET ${OPS_PATHS.readyz}, GET ${OPS_PATHS.metrics}`,
          }),
        );
        request.resume();
        return;
      }
      if (request.method !== method) {
        response.setHeader('allow', method);
        sendError(response, tenantError('ERR_ISSUER_METHOD_NOT_ALLOWED', `${path} takes ${method}`));
        request.resume();
        return;
      }
      inFlight++;
      response.once('close', () => inFlight--);
      void (async () => {
        try {
          if (path === API_PATHS.healthz) {
            send(response, 200, { status: 'ok' });
          } else if (path === OPS_PATHS.readyz) {
            await answerReadyz(response);
          } else if (path === OPS_PATHS.metrics) {
            await answerMetrics(response);
          } else {
            await handshake(path === API_PATHS.nonces ? 'nonce' : 'tenant', request, response);
          }
        } catch (error) {
          if (!response.headersSent) sendError(response, error, log);
        }
      })();
    },
  );
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const source = options.servingFiles === undefined ? '' : ` from ${options.servingFiles.certFile}`;
  const announce = (certificatePem: string, what: string): void => {
    const served = servedCertificate(certificatePem);
    metrics?.servingCertificate(served.notAfter);
    log?.(`${what}: serial ${served.serial}, notAfter ${served.notAfter.toISOString()}${source}`);
  };
  announce(options.tls.certificatePem, 'serving certificate');
  let watch: ServingFilesWatch | undefined;
  if (options.servingFiles !== undefined) {
    // Counted, and logged below in its own words (once per bad pair). Not a readiness condition: the replica keeps
    // serving the previous pair, still valid, and a bad Secret seen by every replica must not take them all out.
    const report = options.background?.register('serving-reload', options.servingFiles.intervalMs, {
      log: false,
      readiness: false,
    });
    watch = watchServingFiles({
      ...options.servingFiles,
      ...(report === undefined ? {} : { report }),
      now: () => new Date(),
      current: options.tls,
      apply(material) {
        // New handshakes use it; connections already open keep the certificate they were made with.
        server.setSecureContext({ cert: material.certificatePem, key: material.keyPem, minVersion: 'TLSv1.2' });
        metrics?.servingReload('reloaded');
        announce(material.certificatePem, 'serving certificate reloaded');
      },
      refused(error) {
        metrics?.servingReload('refused');
        log?.(`serving certificate refused, still serving the previous one: ${describe(error)}`);
      },
    });
  }
  const address = server.address() as AddressInfo;
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;
  return {
    url: `https://${host}:${address.port}`,
    port: address.port,
    server,
    readiness,
    close: (graceMs = 5_000) =>
      new Promise<ClosedIssuer>((resolve) => {
        closing = true;
        watch?.stop();
        lastReady = false;
        const started = inFlight;
        let cut = 0;
        const force = setTimeout(() => {
          cut = inFlight;
          server.closeAllConnections();
        }, graceMs);
        server.close(() => {
          clearTimeout(force);
          resolve({ inFlight: started, cut });
        });
        server.closeIdleConnections();
      }),
  };
}

/** A plain-HTTP listener that serves GET /metrics only (`--metrics-listen`, for Prometheus inside a cluster). */
export async function startMetricsServer(
  metrics: IssuerMetrics,
  host: string,
  port: number,
): Promise<{ url: string; port: number; server: PlainServer; close(): Promise<void> }> {
  const server = createPlainServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    request.resume();
    if (path !== OPS_PATHS.metrics) {
      sendError(
        response,
        tenantError('ERR_ISSUER_NOT_FOUND', `no such path ${path}`, {
          hint: `this listener serves GET ${OPS_PATHS.metrics} only`,
        }),
      );
      return;
    }
    if (request.method !== 'GET') {
      response.setHeader('allow', 'GET');
      sendError(response, tenantError('ERR_ISSUER_METHOD_NOT_ALLOWED', `${path} takes GET`));
      return;
    }
    void metrics.text().then(
      (text) => {
        response.writeHead(200, {
          'content-type': metrics.contentType,
          'content-length': Buffer.byteLength(text),
          'cache-control': 'no-store',
        });
        response.end(text);
      },
      (error: unknown) => sendError(response, error),
    );
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.address.includes(':') ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    port: address.port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
