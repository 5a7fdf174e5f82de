import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeTransport } from '../../src/kube/transport.js';
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
    const kube = createKubeTransport({ server: endless.url, caPem: ca.cert }, { kind: 'token', token: 'sekret' }, { timeoutMs: 20_000 });
    try {
      const error = await kube.send({ method: 'GET', path: '/version' }).then(() => undefined, (e: unknown) => e as { code: string; message: string });
      expect(error?.code).toBe('ERR_KUBE_RESPONSE_TOO_LARGE');
      expect(error?.message).toContain(endless.url);
      expect(written).toBeLessThan(128 * 1024 * 1024);
    } finally {
      await kube.close();
    }
  });
});
