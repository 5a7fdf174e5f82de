import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeTransport } from '../../src/kube/transport.js';
import { buildTokenRequest, processTokenRequestResponse } from '../../src/providers/token-request/protocol.js';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.js';

describe('kube transport against a misbehaving API server', () => {
  let ca: TestCa;
  let endless: TestHttpsServer;
  let written = 0;
  beforeAll(async () => {
    ca = await createTestCa();
    // Answers with a body that does not end (up to 256 MiB): a broken proxy or a hostile endpoint.
    endless = await startHttpsServer({
      ca,
      handler: (_request, _req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(1024 * 1024, 0x20);
        const pump = () => {
          while (written < 256 * 1024 * 1024) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('close', () => undefined);
        pump();
      },
    });
  });
  afterAll(async () => {
    await endless.close();
  });

  it('stops reading a response body past its limit with a coded error instead of buffering it all', async () => {
    const kube = createKubeTransport(
      { server: endless.url, caPem: ca.cert },
      { kind: 'token', token: 'sekret' },
      { timeoutMs: 20_000 },
    );
    try {
      const error = await kube.send({ method: 'GET', path: '/version' }).then(
        () => undefined,
        (e: unknown) => e as { code: string; message: string },
      );
      expect(error?.code).toBe('ERR_KUBE_RESPONSE_TOO_LARGE');
      expect(error?.message).toContain(endless.url);
      expect(written).toBeLessThan(128 * 1024 * 1024);
    } finally {
      await kube.close();
    }
  });
});

describe('kube transport: our credential never comes back in an error answer', () => {
  const bootstrapToken = 'bootstrap-token-0123456789abcdef';
  let ca: TestCa;
  let echoing: TestHttpsServer;
  beforeAll(async () => {
    ca = await createTestCa();
    // An auth proxy in front of the API server that repeats the credential it refused (as some do in debug mode).
    echoing = await startHttpsServer({
      ca,
      handler: (request, _req, res) => {
        if (request.url.endsWith('/json')) {
          res.writeHead(401, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              kind: 'Status',
              status: 'Failure',
              message: `token ${request.bearer} is not valid`,
              code: 401,
            }),
          );
          return;
        }
        res.writeHead(401, { 'content-type': 'text/plain' });
        res.end(`invalid bearer token "${request.bearer}"`);
      },
    });
  });
  afterAll(async () => {
    await echoing.close();
  });

  it.each(['/text', '/json'])('a 401 that repeats the bearer token (%s) is reported without it', async (suffix) => {
    const settings = { namespace: 'ns', serviceAccount: 'sa', audiences: [], expirationSeconds: 3600 };
    const kube = createKubeTransport(
      { server: `${echoing.url}${suffix}`, caPem: ca.cert },
      { kind: 'token', token: bootstrapToken },
    );
    try {
      const response = await kube.send(buildTokenRequest(settings));
      expect(response.status).toBe(401);
      let message = '';
      try {
        processTokenRequestResponse(response, settings, { server: echoing.url, now: new Date() });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^the API server rejected the bootstrap credential \(401 Unauthorized\)/);
      expect(message).not.toContain(bootstrapToken);
      expect(JSON.stringify(response.body)).not.toContain(bootstrapToken);
    } finally {
      await kube.close();
    }
  });
});
