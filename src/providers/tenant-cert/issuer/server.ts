/**
 * The issuer's HTTPS front: routes, body limits, JSON in and out, errors as `{code, message, path?, hint?}` with the
 * status the error registry gives its code (500 when it gives none). The logic lives in ./issuer.ts.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseDocument } from '../../../core/document.js';
import { ERRORS, errorSpec, isCredentialsError } from '../../../core/errors.js';
import { API_PATHS, MAX_BODY_BYTES, tenantError, type ErrorResponse } from '../wire/protocol.js';
import type { ServingMaterial } from './data-dir.js';
import type { Issuer } from './issuer.js';

export interface IssuerServerOptions {
  issuer: Issuer;
  tls: ServingMaterial;
  host: string;
  /** 0: any free port. */
  port: number;
  log?(line: string): void;
}

export interface RunningIssuer {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
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
  Object.keys(ERRORS).filter((code) => code.startsWith('ERR_TENANT_') && errorSpec(code)?.http !== undefined).concat([
    'ERR_ISSUER_NOT_FOUND',
    'ERR_ISSUER_METHOD_NOT_ALLOWED',
    'ERR_ISSUER_BODY_TOO_LARGE',
    'ERR_ISSUER_UNSUPPORTED_MEDIA_TYPE',
    'ERR_ISSUER_BUSY',
  ]),
);

/** What a client is told for a code that is not {@link CLIENT_FACING}. */
const GENERIC_MESSAGES: Readonly<Record<string, string>> = {
  ERR_ISSUER_SIGNER_FAILED: 'the certificate signer failed; try again later (details in the issuer log)',
  ERR_ISSUER_SIGNER_DENIED: 'the certificate signer refused to sign (details in the issuer log)',
  ERR_ISSUER_SIGNER_TIMEOUT: 'the certificate signer did not answer in time; try again later',
  ERR_ISSUER_STATE_UNAVAILABLE: "the issuer's state store is unavailable; try again later",
  ERR_ISSUER_STATE_FORBIDDEN: "the issuer's state store refused the issuer; try again later (details in the issuer log)",
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
    log?.(`internal error: ${(error instanceof Error ? (error.stack ?? error.message) : String(error)).replace(/[\r\n]+\s*/g, ' | ')}`);
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
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw tenantError('ERR_ISSUER_BODY_TOO_LARGE', `the body is larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  // `$`: the error's path, which the answer carries (JSON paths into the request only).
  return parseDocument(Buffer.concat(chunks).toString('utf8'), { source: '$', code: 'ERR_TENANT_INVALID_DOCUMENT', format: 'json', message: 'the body is not JSON', maxBytes: MAX_BODY_BYTES });
}

const ROUTES: Readonly<Record<string, string>> = {
  [API_PATHS.nonces]: 'POST',
  [API_PATHS.tenants]: 'POST',
  [API_PATHS.healthz]: 'GET',
};

/** Starts the HTTPS server; resolves once it listens. */
export async function startIssuerServer(options: IssuerServerOptions): Promise<RunningIssuer> {
  const { issuer, log } = options;
  const server = createServer(
    { cert: options.tls.certificatePem, key: options.tls.keyPem, minVersion: 'TLSv1.2' },
    (request, response) => {
      const path = (request.url ?? '/').split('?')[0] ?? '/';
      const method = ROUTES[path];
      if (method === undefined) {
        sendError(response, tenantError('ERR_ISSUER_NOT_FOUND', `no such path ${path}`, { hint: `the API: POST ${API_PATHS.nonces}, POST ${API_PATHS.tenants}, GET ${API_PATHS.healthz}` }));
        request.resume();
        return;
      }
      if (request.method !== method) {
        response.setHeader('allow', method);
        sendError(response, tenantError('ERR_ISSUER_METHOD_NOT_ALLOWED', `${path} takes ${method}`));
        request.resume();
        return;
      }
      void (async () => {
        try {
          if (path === API_PATHS.healthz) {
            send(response, 200, { status: 'ok' });
            return;
          }
          const body = await readJson(request);
          if (path === API_PATHS.nonces) {
            send(response, 201, await issuer.issueNonce(body));
          } else {
            send(response, 201, (await issuer.acceptTenant(body)).identity);
          }
        } catch (error) {
          if (!response.headersSent) {
            if (isCredentialsError(error) && error.code === 'ERR_ISSUER_BODY_TOO_LARGE') {
              response.setHeader('connection', 'close');
            }
            sendError(response, error, log);
          }
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
  const address = server.address() as AddressInfo;
  const host = address.address.includes(':') ? `[${address.address}]` : address.address;
  return {
    url: `https://${host}:${address.port}`,
    port: address.port,
    server,
    // Stop accepting, let requests in flight finish (up to 5 s), then cut what is left.
    close: () =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), 5_000);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
