// The HTTP seam's streamed answers (`onChunk`, what a Kubernetes watch reads) against a real server on 127.0.0.1:
// each chunk is handed over as it arrives, before the answer ends; nothing is buffered, so the body limit does not
// apply to the total; an error status is still read whole (and its limit applies).
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createHttpClient } from '../../src/base/http.js';

let server: Server;
let base: string;
/** The open streaming answer, ended by the test. */
let streaming: ServerResponse | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"a":1}\n');
      streaming = res;
      return;
    }
    res.writeHead(410, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', code: 410, message: 'x'.repeat(50) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

test('a 2xx answer is handed over chunk by chunk while it lasts, unbuffered and beyond the body limit', async () => {
  const client = createHttpClient({ maxResponseBytes: 64, timeoutMs: 10_000 });
  const received: string[] = [];
  let firstBeforeEnd: (() => void) | undefined;
  const first = new Promise<void>((resolve) => (firstBeforeEnd = resolve));
  const answer = client.send({
    method: 'GET',
    base,
    url: '/stream',
    onChunk: (chunk) => {
      received.push(chunk.toString('utf8'));
      firstBeforeEnd?.();
    },
  });
  await first; // the first chunk arrived while the server still holds the answer open
  expect(received.join('')).toBe('{"a":1}\n');
  streaming!.write(`${'y'.repeat(100)}\n`);
  streaming!.end('{"b":2}\n');
  const response = await answer;
  expect(response.status).toBe(200);
  expect(response.body.length).toBe(0);
  expect(received.join('')).toBe(`{"a":1}\n${'y'.repeat(100)}\n{"b":2}\n`);
  await client.close();
});

test('an error status is read whole as usual (and the body limit applies to it)', async () => {
  const client = createHttpClient({ maxResponseBytes: 1024 });
  const chunks: Buffer[] = [];
  const response = await client.send({ method: 'GET', base, url: '/gone', onChunk: (chunk) => chunks.push(chunk) });
  expect(response.status).toBe(410);
  expect(chunks).toEqual([]);
  expect((response.json as { code: number }).code).toBe(410);
  const small = createHttpClient({ maxResponseBytes: 16 });
  await expect(small.send({ method: 'GET', base, url: '/gone', onChunk: () => undefined })).rejects.toMatchObject({
    kind: 'too-large',
  });
  await client.close();
  await small.close();
});
