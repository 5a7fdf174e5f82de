/**
 * The readiness checks the issuer's server takes (the data dir's, the Kubernetes state backend's): each runs with a
 * deadline, so a check that hangs — even one that ignores its abort signal — makes /readyz answer 503 within that
 * deadline instead of hanging the kubelet's probe; a failing check's code is named, its details are logged only.
 * In-process server over real TLS (the process-level behaviour: issuer-operations.test.ts).
 */
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { CredentialsError } from '../../src/base/errors.js';
import { startIssuerServer, type ReadinessCheck, type RunningIssuer } from '../../src/issuer/server.js';
import { issuerFixture, type IssuerFixture } from '../helpers/issuer-fixtures.js';
import { createTestCa } from '../helpers/tls.js';

let fixture: IssuerFixture | undefined;
let running: RunningIssuer | undefined;
afterEach(async () => {
  await running?.close(100);
  await fixture?.close();
  running = undefined;
  fixture = undefined;
});

async function serve(
  checks: ReadinessCheck[],
  log: string[],
): Promise<(path: string) => Promise<{ status: number; body: any; ms: number }>> {
  fixture = await issuerFixture();
  const ca = await createTestCa('readiness-test-ca');
  const pair = await ca.issueServerCert({ ips: ['127.0.0.1'] });
  running = await startIssuerServer({
    issuer: fixture.issuer,
    tls: { certificatePem: pair.cert, keyPem: pair.key, caPem: ca.cert },
    host: '127.0.0.1',
    port: 0,
    readinessChecks: checks,
    readinessTimeoutMs: 300,
    log: (line) => log.push(line),
  });
  const agent = new Agent({ connect: { ca: ca.cert } });
  const url = running.url;
  return async (path) => {
    const started = Date.now();
    const response = await request(`${url}${path}`, { dispatcher: agent });
    return { status: response.statusCode, body: await response.body.json(), ms: Date.now() - started };
  };
}

describe('readiness checks', () => {
  it('a hanging check (one that honours its signal, one that ignores it) fails at the deadline; a throwing one is named with its code', async () => {
    let aborted: unknown;
    const log: string[] = [];
    const get = await serve(
      [
        { name: 'ok', check: async () => undefined },
        {
          name: 'polite',
          check: (signal) =>
            new Promise((_resolve, reject) =>
              signal.addEventListener('abort', () => {
                aborted = signal.reason;
                reject(signal.reason);
              }),
            ),
        },
        { name: 'deaf', check: () => new Promise(() => undefined) },
        {
          name: 'state',
          check: async () => {
            throw new CredentialsError('ERR_ISSUER_DATA_DIR', 'the secret /very/private/path is unreadable');
          },
        },
      ],
      log,
    );
    const answer = await get('/readyz');
    expect(answer.status).toBe(503);
    expect(answer.ms).toBeLessThan(3000);
    expect(answer.body).toEqual({
      code: 'ERR_ISSUER_NOT_READY',
      message: 'not ready: polite, deaf, state (details in the issuer log)',
      checks: {
        serving: 'ok',
        ok: 'ok',
        polite: 'ERR_ISSUER_NOT_READY',
        deaf: 'ERR_ISSUER_NOT_READY',
        state: 'ERR_ISSUER_DATA_DIR',
      },
    });
    expect(JSON.stringify(answer.body)).not.toContain('/very/private/path');
    expect((aborted as { code?: string }).code).toBe('ERR_ISSUER_NOT_READY');
    expect(log).toContain(
      'readiness check deaf failed: ERR_ISSUER_NOT_READY: readiness check deaf took longer than 300 ms',
    );
    expect(log.some((line) => line.includes('/very/private/path'))).toBe(true);
    // Liveness does not depend on the checks.
    expect((await get('/healthz')).status).toBe(200);
  });

  it('checks that pass make /readyz 200; while the server stops, /readyz is 503 whatever the checks say', async () => {
    const get = await serve([{ name: 'state', check: async () => undefined }], []);
    expect(await get('/readyz')).toMatchObject({
      status: 200,
      body: { status: 'ready', checks: { serving: 'ok', state: 'ok' } },
    });
    const closing = running!.close(2000);
    expect(await running!.readiness()).toEqual({ ready: false, checks: { serving: 'ERR_ISSUER_NOT_READY' } });
    await closing;
  });
});
