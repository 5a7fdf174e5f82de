/**
 * The issuer's HTTPS front: routes, body limits, JSON in and out, errors as `{code, message, path?, hint?}` with the
 * status of {@link HTTP_STATUS}. The logic lives in ./issuer.ts.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isCredentialsError } from '../../../library/errors.js';
import { API_PATHS, HTTP_STATUS, MAX_BODY_BYTES, tenantError, type ErrorResponse, type TenantCertErrorCode } from '../protocol.js';
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

function sendError(response: ServerResponse, error: unknown, log?: (line: string) => void): void {
  if (isCredentialsError(error)) {
    const status = HTTP_STATUS[error.code as TenantCertErrorCode] ?? (error.code === 'ERR_ISSUER_TRUST_RECORD' ? 500 : 400);
    const body: ErrorResponse = {
      code: error.code,
      message: error.message,
      ...(error.path === undefined || error.path.startsWith('/') ? {} : { path: error.path }),
      ...(error.hint === undefined ? {} : { hint: error.hint }),
    };
    send(response, status, body);
    return;
  }
  log?.(`internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  send(response, 500, { code: 'ERR_ISSUER_INTERNAL', message: 'internal error (see the issuer log)' } satisfies ErrorResponse);
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
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (cause) {
    throw tenantError('ERR_TENANT_INVALID_DOCUMENT', 'the body is not JSON', { cause });
  }
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
