import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certFingerprint, createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.js';

function get(url: string, options: https.RequestOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ...options, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

describe('test TLS helper (reused by other suites)', () => {
  let ca: TestCa;
  let server: TestHttpsServer;
  beforeAll(async () => {
    ca = await createTestCa();
    server = await startHttpsServer({ ca, clientCert: 'require' });
  });
  afterAll(() => server.close());

  it('serves 127.0.0.1 with a certificate the CA verifies and records the client certificate and bearer', async () => {
    const client = await ca.issueClientCert('alice', { groups: ['system:masters'] });
    const res = await get(`${server.url}/api`, {
      ca: ca.cert,
      cert: client.cert,
      key: client.key,
      headers: { authorization: 'Bearer t0' },
    });
    expect(res.status).toBe(200);
    const last = server.requests.at(-1);
    expect(last?.bearer).toBe('t0');
    expect(last?.clientCert?.subjectCN).toBe('alice');
    expect(last?.clientCert?.fingerprint256).toBe(certFingerprint(client.cert));
  });

  it('refuses a client without a certificate when one is required', async () => {
    await expect(get(`${server.url}/api`, { ca: ca.cert })).rejects.toThrow();
  });

  it('is not trusted without the CA', async () => {
    const other = await createTestCa('other');
    await expect(get(`${server.url}/api`, { ca: other.cert })).rejects.toThrow(/self|verify|certificate/i);
  });
});
