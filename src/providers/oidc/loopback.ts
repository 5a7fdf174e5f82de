/**
 * The loopback redirect listener of the authorization code flow (RFC 8252 §7.3): an HTTP server on 127.0.0.1 (any
 * free port unless one is asked for) that waits for the browser to come back to `/callback`. Requests that do not
 * carry our `state` are answered 400 and ignored, so a stray or forged request cannot end the login.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CredentialsError } from '../../base/errors.js';

export interface LoopbackListener {
  redirectUri: string;
  /** The first callback for which `isOurs` is true (answered with a page the person can close). */
  next(isOurs: (callback: URL) => boolean): Promise<URL>;
  close(): Promise<void>;
}

const page = (title: string, text: string): string =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${text}</p></body></html>`;

export async function awaitLoopbackRedirect(o: {
  port: number;
  path: string;
  timeoutMs: number;
  signal: AbortSignal;
}): Promise<LoopbackListener> {
  let waiter: { isOurs: (url: URL) => boolean; resolve: (url: URL) => void } | undefined;
  // node:http taken here, not imported: only the authorization code flow listens, and loading it would add to the
  // peak RSS of every other grant's miss.
  const server = process.getBuiltinModule('node:http').createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1`);
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    if (req.method !== 'GET' || url.pathname !== o.path || waiter === undefined || !waiter.isOurs(url)) {
      res.statusCode = url.pathname === o.path ? 400 : 404;
      res.end(page('Unexpected request', 'This address only receives the login redirect of clusterprofile-oidc.'));
      return;
    }
    const failed = url.searchParams.get('error') !== null;
    res.end(
      failed
        ? page('Login failed', 'Return to the terminal for details.')
        : page('Logged in', 'You may close this window and return to the terminal.'),
    );
    const { resolve } = waiter;
    waiter = undefined;
    resolve(url);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new CredentialsError(
          'ERR_OIDC_LOGIN_FAILED',
          `cannot listen on 127.0.0.1:${o.port} for the login redirect: ${error.code ?? error.message}`,
          {
            path: '--redirect-port',
            hint: 'choose another --redirect-port, or leave it out to use any free port',
            cause: error,
          },
        ),
      ),
    );
    server.listen(o.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    redirectUri: `http://127.0.0.1:${port}${o.path}`,
    next(isOurs) {
      return new Promise<URL>((resolve, reject) => {
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new CredentialsError('ERR_OIDC_LOGIN_FAILED', `no login within ${Math.round(o.timeoutMs / 1000)} s`, {
              path: '--login-timeout',
              hint: 'run the command again, or raise --login-timeout',
            }),
          );
        }, o.timeoutMs);
        const onAbort = (): void => {
          cleanup();
          reject(o.signal.reason);
        };
        const cleanup = (): void => {
          clearTimeout(timer);
          o.signal.removeEventListener('abort', onAbort);
          waiter = undefined;
        };
        o.signal.addEventListener('abort', onAbort, { once: true });
        waiter = {
          isOurs,
          resolve: (url) => {
            cleanup();
            resolve(url);
          },
        };
      });
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
