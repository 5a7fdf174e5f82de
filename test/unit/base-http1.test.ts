// HTTP/1.1 on the wire (src/base/http/http1.ts): the request head the seam writes and the answer reader, fed hand-made
// bytes — whole, and one byte at a time, as a slow server or a small TLS record would deliver them.
import { describe, expect, it } from 'vitest';
import {
  AnswerReader,
  MAX_HEAD_BYTES,
  requestHead,
  type AnswerHead,
  type WireError,
} from '../../src/base/http/http1.js';

interface Read {
  head: AnswerHead | undefined;
  body: string;
  done: boolean;
  reusable: boolean;
  idleMs: number | undefined;
}

/** Feeds `bytes` to a reader (in pieces of `step` bytes), then the end of the connection when `end`. */
function read(bytes: string, options: { method?: string; step?: number; end?: boolean } = {}): Read {
  let head: AnswerHead | undefined;
  let body = '';
  const reader = new AnswerReader(options.method ?? 'GET', {
    onHead: (answer) => (head = answer),
    onBody: (chunk) => (body += chunk.toString('latin1')),
  });
  const buffer = Buffer.from(bytes, 'latin1');
  const step = options.step ?? buffer.length;
  for (let offset = 0; offset < buffer.length; offset += step) reader.push(buffer.subarray(offset, offset + step));
  if (options.end === true) reader.end();
  return { head, body, done: reader.done, reusable: reader.reusable, idleMs: reader.idleMs };
}

function failure(run: () => unknown): WireError {
  try {
    run();
  } catch (error) {
    return error as WireError;
  }
  throw new Error('expected a failure');
}

describe('the request head', () => {
  it('is the request line and the fields in the order given, CRLF-terminated', () => {
    expect(
      requestHead('POST', '/apis/x?watch=1', { host: 'h:6443', authorization: 'Bearer t', 'content-length': '2' }),
    ).toBe('POST /apis/x?watch=1 HTTP/1.1\r\nhost: h:6443\r\nauthorization: Bearer t\r\ncontent-length: 2\r\n\r\n');
  });

  it('refuses a value with a line break (a smuggled second request), naming the field but never the value', () => {
    const error = failure(() => requestHead('GET', '/', { authorization: 'Bearer secret\r\nX-Injected: 1' }));
    expect(error.code).toBe('ERR_INVALID_CHAR');
    expect(error.message).toContain('authorization');
    expect(error.message).not.toContain('secret');
    expect(failure(() => requestHead('GET', '/', { 'bad name': 'v' })).code).toBe('ERR_INVALID_HTTP_TOKEN');
    expect(failure(() => requestHead('GET', '/a b', {})).code).toBe('ERR_UNESCAPED_CHARACTERS');
    expect(failure(() => requestHead('GET', '/', { x: 'caf\u00e9 \u2603' })).code).toBe('ERR_INVALID_CHAR');
  });
});

describe('the answer', () => {
  const sized =
    'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nX-Multi: a\r\nx-multi: b\r\n\r\n{"ok":true}';

  it('with Content-Length: the status, every field as sent, the body; the connection may be reused', () => {
    for (const step of [sized.length, 1, 7]) {
      const answer = read(sized, { step });
      expect(answer.head).toEqual({
        status: 200,
        rawHeaders: ['Content-Type', 'application/json', 'Content-Length', '11', 'X-Multi', 'a', 'x-multi', 'b'],
      });
      expect(answer).toMatchObject({ body: '{"ok":true}', done: true, reusable: true });
    }
    expect(read(sized.slice(0, -1))).toMatchObject({ done: false, body: '{"ok":true' });
  });

  it('chunked: chunk extensions and the trailer section handled, the body joined', () => {
    const chunked =
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n';
    for (const step of [chunked.length, 1, 3])
      expect(read(chunked, { step })).toMatchObject({ body: 'hello, world', done: true, reusable: true });
    expect(read(chunked.slice(0, -2))).toMatchObject({ done: false });
  });

  it('without a length: the body lasts until the connection ends, and the connection is not reused', () => {
    const open = 'HTTP/1.1 200 OK\r\n\r\npart one, ';
    expect(read(open)).toMatchObject({ done: false, body: 'part one, ' });
    expect(read(`${open}part two`, { end: true })).toMatchObject({
      done: true,
      reusable: false,
      body: 'part one, part two',
    });
  });

  it('no body for HEAD, 204 and 304 whatever Content-Length says; interim 1xx answers are skipped', () => {
    expect(read('HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n', { method: 'HEAD' })).toMatchObject({
      done: true,
      body: '',
      reusable: true,
    });
    expect(read('HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n')).toMatchObject({ done: true, body: '' });
    expect(read('HTTP/1.1 304 Not Modified\r\n\r\n')).toMatchObject({ done: true, body: '' });
    const answer = read(
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok',
      { step: 5 },
    );
    expect(answer).toMatchObject({ done: true, body: 'ok' });
    expect(answer.head?.status).toBe(201);
  });

  it('is not reused after Connection: close, from HTTP/1.0, or with bytes after it', () => {
    expect(read('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')).toMatchObject({
      done: true,
      reusable: false,
    });
    expect(read('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ done: true, reusable: false });
    expect(read('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n')).toMatchObject({
      body: 'ok',
      done: true,
      reusable: false,
    });
  });

  it('says how long the server keeps the connection idle when it does', () => {
    expect(read('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 0\r\n\r\n').idleMs).toBe(5000);
    expect(read('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n').idleMs).toBeUndefined();
  });

  // Each found by the differential fuzz test (test/fuzz/http1-target.ts), where llhttp refuses and we read on.
  it('refuses what llhttp refuses: two framings, repeated or empty lengths, obs-fold, bare LF, odd chunk lines', () => {
    const invalid = (bytes: string): string => failure(() => read(bytes)).message;
    expect(
      invalid('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'),
    ).toBe('the answer has both Content-Length and Transfer-Encoding');
    expect(invalid('HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok')).toBe(
      'the answer has an invalid Content-Length',
    );
    expect(invalid('HTTP/1.1 304 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n')).toBe(
      'the answer has more than one Content-Length',
    );
    expect(invalid('HTTP/1.1 204 OK\r\nContent-Length:\r\n\r\n')).toBe('the answer has an invalid Content-Length');
    expect(invalid('HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n')).toBe('the answer has an empty Transfer-Encoding');
    expect(invalid('HTTP/1.1 200 OK\r\nX-Long: a\r\n  b\r\nContent-Length: 0\r\n\r\n')).toContain('obs-fold');
    // A bare LF inside a field line is a character of its value, never a blank to strip.
    expect(invalid('HTTP/1.1 200 OK\r\nX-A:\n\r\nContent-Length: 0\r\n\r\n')).toContain('invalid character');
    const chunked = (line: string): string =>
      invalid(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${line}\r\nok\r\n0\r\n\r\n`);
    for (const line of ['2;a=\x01', '2;a="open', '2; a', '2\t;a', '2 ']) expect(chunked(line)).toMatch(/chunk/);
    expect(invalid('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nNoColon\r\n\r\n')).toBe(
      'the answer has a malformed header field',
    );
    expect(invalid('HTTP/1.0 103 Early Hints\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n')).toContain(
      'interim',
    );
  });

  it('reads what llhttp reads: quoted and empty chunk extensions, `chunked,` as a body to the end', () => {
    const chunked = read('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a="x y";b=;c\r\nok\r\n0\r\n\r\n');
    expect(chunked).toMatchObject({ body: 'ok', done: true });
    const toTheEnd = read('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked,\r\n\r\n2\r\nok', { end: true });
    expect(toTheEnd).toMatchObject({ body: '2\r\nok', done: true, reusable: false });
  });

  it('refuses what is not HTTP/1.1: a bad status line, conflicting lengths, bad chunk framing, a protocol switch', () => {
    const invalid = (bytes: string): string => failure(() => read(bytes)).code;
    expect(invalid('SSH-2.0-OpenSSH\r\n\r\n')).toBe('ERR_HTTP_INVALID_RESPONSE');
    expect(invalid('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n')).toBe(
      'ERR_HTTP_INVALID_RESPONSE',
    );
    expect(invalid('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n')).toBe('ERR_HTTP_INVALID_RESPONSE');
    expect(invalid('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')).toBe('ERR_HTTP_INVALID_RESPONSE');
    expect(invalid('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokay\r\n')).toBe(
      'ERR_HTTP_INVALID_RESPONSE',
    );
    expect(invalid('HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n')).toBe('ERR_HTTP_INVALID_RESPONSE');
    expect(invalid('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n')).toBe('ERR_HTTP_INVALID_RESPONSE');
  });

  it(`refuses a header or a trailer section over ${MAX_HEAD_BYTES} bytes, before it has all arrived`, () => {
    const long = `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(MAX_HEAD_BYTES)}`;
    expect(failure(() => read(long)).code).toBe('ERR_HTTP_HEADER_OVERFLOW');
    const trailers = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n${'X-T: t\r\n'.repeat(MAX_HEAD_BYTES / 8 + 1)}`;
    expect(failure(() => read(trailers)).code).toBe('ERR_HTTP_HEADER_OVERFLOW');
  });

  it('cut short by the end of the connection: a reset, "socket hang up" when nothing came at all', () => {
    expect(failure(() => read('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok', { end: true }))).toMatchObject({
      code: 'ECONNRESET',
      message: 'the connection closed before the answer was complete',
    });
    expect(
      failure(() => read('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n', { end: true })).code,
    ).toBe('ECONNRESET');
    expect(failure(() => read('', { end: true }))).toMatchObject({ code: 'ECONNRESET', message: 'socket hang up' });
  });

  it('a body handler that throws stops the reading with its error', () => {
    const reader = new AnswerReader('GET', {
      onHead: () => undefined,
      onBody: () => {
        throw new Error('too large');
      },
    });
    expect(() => reader.push(Buffer.from(sized))).toThrow('too large');
  });
});
