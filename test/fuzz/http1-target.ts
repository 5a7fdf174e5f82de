/**
 * Differential fuzz target `http1`: HTTP/1.1 answers (valid, mutated, truncated, split into pieces) served from a raw
 * TCP socket on 127.0.0.1, read by our seam (src/base/http.ts over src/base/http/http1.ts) and by Node's own client
 * (node:http, llhttp). Both must give the same status, fields and body, or both refuse; the only differences allowed
 * are the refusals on our side listed in {@link OUR_REFUSALS} (docs/explanation/security.md, "How we test it").
 * Each case also feeds our reader the answer split at every byte boundary: the result must not depend on the split.
 */
import { request as nodeRequest } from 'node:http';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { createHttpClient, isHttpFailure } from '../../src/base/http.js';
import { type AnswerHead, AnswerReader, MAX_HEAD_BYTES } from '../../src/base/http/http1.js';
import { mutateBytes, type Random } from './random.js';
import { type FuzzSession, type FuzzTarget, Tally } from './runner.js';

/** One answer as the server writes it: the bytes, cut into the pieces written one after the other. */
export interface AnswerCase {
  method: 'GET' | 'HEAD';
  pieces: Buffer[];
  /** Also feed our reader the answer cut once at each byte boundary (one case in four: it costs a read per byte). */
  everySplit: boolean;
}

type Outcome =
  | { kind: 'answer'; status: number; headers: Record<string, string>; body: string }
  | { kind: 'refused'; reason: string };

/**
 * Answers our reader refuses and llhttp reads, each a documented refusal: the name is what the docs list, the test
 * is on the bytes served and on our refusal's message.
 */
export const OUR_REFUSALS: ReadonlyArray<{ name: string; applies: (bytes: string, reason: string) => boolean }> = [
  {
    // llhttp's limit is node's --max-http-header-size (raised for the reference here so ours is the one that bites).
    name: `answer head or trailer section over ${MAX_HEAD_BYTES} bytes`,
    applies: (_bytes, reason) => /larger than \d+ bytes/.test(reason),
  },
  {
    name: 'a status line of another version than HTTP/1.0 or HTTP/1.1 (`HTTP/2.0 200`), or empty lines before it',
    applies: (bytes, reason) =>
      reason.includes('does not start with an HTTP/1.x status line') &&
      (/^(?:\r?\n)+HTTP\//.test(bytes) || /^HTTP\/(?!1\.[01] )\d\.\d /.test(bytes)),
  },
  {
    name: 'a chunk extension that is not `;name`, `;name=` or `;name=value` (llhttp takes `;=`)',
    applies: (_bytes, reason) => reason.includes('invalid chunk extension'),
  },
  {
    name: 'a 101 Switching Protocols answer to a request that did not ask for it',
    applies: (bytes, reason) => /^HTTP\/1\.[01] 101/m.test(bytes) && reason.includes('switched protocols'),
  },
];

const REASONS = ['OK', 'Not Found', '', 'Weird \x80 reason', 'Internal Server Error'];
const STATUSES = [200, 200, 200, 201, 204, 206, 301, 304, 400, 401, 403, 404, 500, 503, 100, 103, 101, 199, 999];
const TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-!#$%&'*+.^_`|~";

function token(random: Random, length = random.int(1, 12)): string {
  let out = '';
  for (let index = 0; index < length; index += 1) out += random.pick([...TOKEN_CHARS]);
  return out;
}

function chunkExtension(random: Random): string {
  return random.pick([
    '',
    '',
    `;${token(random)}`,
    `;${token(random)}=${token(random)}`,
    `;${token(random)}="quoted value"`,
    ` ;${token(random)}`,
    `; ${token(random)}`,
    ';',
    ';=x',
    `;${token(random)}=`,
    `;a="unterminated`,
    ';a=b c',
    `;a=\x01`,
  ]);
}

/** The body framed as chunks, with extensions, odd sizes and trailers now and then. */
function chunkedBody(random: Random, body: Buffer, eol: () => string, sound: boolean): string {
  const extension = (): string =>
    sound ? random.pick(['', '', `;${token(random)}=${token(random)}`]) : chunkExtension(random);
  let out = '';
  let offset = 0;
  while (offset < body.length) {
    const size = Math.min(body.length - offset, random.int(1, 40));
    const hex = size.toString(16);
    const written = random.pick([hex, hex.toUpperCase(), `00${hex}`, hex, hex]);
    out += `${written}${!sound && random.chance(0.1) ? random.pick([' ', '\t', '  ']) : ''}${extension()}${eol()}`;
    out += body.subarray(offset, offset + size).toString('latin1') + eol();
    offset += size;
  }
  out += `${random.pick(['0', '0', '000'])}${extension()}${eol()}`;
  if (random.chance(0.2)) out += `${random.pick(['X-Trailer', 'Expires', 'x-t'])}: ${token(random)}${eol()}`;
  return out + eol();
}

/** A plausible answer, then (often) broken on purpose. */
function generateAnswer(random: Random): Buffer {
  // Four answers in ten are sound (both readers read them); the rest draw from the odd and the broken too.
  const sound = random.chance(0.4);
  const bareLf = !sound && random.chance(0.05);
  const eol = (): string =>
    sound ? '\r\n' : bareLf && random.chance(0.5) ? '\n' : random.chance(0.01) ? '\r' : '\r\n';
  const status = sound ? random.pick([200, 200, 201, 204, 304, 404, 500]) : random.pick(STATUSES);
  const version = sound
    ? 'HTTP/1.1'
    : random.pick(['HTTP/1.1', 'HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/1.2', 'HTTP/2.0', 'http/1.1']);
  const reason = random.pick(REASONS);
  let head = `${version} ${status}${random.chance(0.1) ? '' : ` ${reason}`}${eol()}`;
  if (status < 200 && status !== 101 && random.chance(0.7)) {
    head += `${random.chance(0.5) ? 'Link: </a>; rel=preload' : 'X-Interim: 1'}${eol()}${eol()}HTTP/1.1 200 OK${eol()}`;
  }
  const body = random.chance(0.3) ? Buffer.alloc(0) : Buffer.from(token(random, random.int(1, 200)), 'latin1');
  const framing = sound
    ? random.pick(['length', 'chunked', 'close'])
    : random.pick(['length', 'length', 'chunked', 'chunked', 'close', 'both', 'te-list']);
  const fields: string[] = [];
  fields.push(`Content-Type: ${random.pick(['application/json', 'text/plain; charset=utf-8', ''])}`);
  if (framing === 'length' || framing === 'both') {
    const length = body.length;
    fields.push(
      `Content-Length: ${
        sound
          ? length
          : random.pick([
              `${length}`,
              `${length}`,
              `${length}`,
              ` ${length} `,
              `${length}, ${length}`,
              `${length},${length + 1}`,
              `+${length}`,
              `0${length}`,
              `${length + random.int(1, 5)}`,
              `${Math.max(0, length - random.int(1, 5))}`,
              '-1',
              '0x10',
              '99999999999999999999',
              '',
            ])
      }`,
    );
    if (!sound && random.chance(0.15)) fields.push(`content-length: ${random.pick([`${length}`, `${length + 1}`])}`);
  }
  if (framing === 'chunked' || framing === 'both' || framing === 'te-list') {
    const coding =
      framing === 'te-list'
        ? random.pick([
            'gzip, chunked',
            'chunked, gzip',
            'identity',
            'chunked,chunked',
            'gzip',
            'chunked ,',
            ', chunked',
          ])
        : sound
          ? 'chunked'
          : random.pick(['chunked', 'chunked', 'Chunked', 'CHUNKED', 'chunked ', 'chunked;q=1', 'xchunked']);
    fields.push(`Transfer-Encoding: ${coding}`);
    if (!sound && random.chance(0.1)) fields.push(`Transfer-Encoding: ${random.pick(['chunked', 'gzip', 'identity'])}`);
  }
  if (random.chance(0.3)) fields.push(`Connection: ${random.pick(['close', 'keep-alive', 'Keep-Alive, close', 'x'])}`);
  if (random.chance(0.2)) fields.push(`Keep-Alive: timeout=${random.int(0, 99)}`);
  if (random.chance(0.3)) fields.push(`X-Multi: ${token(random)}`, `x-multi: ${token(random)}`);
  if (!sound && random.chance(0.1))
    fields.push(`X-Folded: ${token(random)}${eol()}${random.pick([' ', '\t', '   '])}${token(random)}`);
  if (random.chance(0.1)) fields.push(`X-Obs-Text: caf\xe9 \xff`);
  if (random.chance(0.1)) fields.push(`X-Empty:`);
  if (!sound && random.chance(0.08)) {
    fields.push(
      random.pick([
        'X-Space : v',
        ' X-Leading: v',
        'NoColon',
        ': empty-name',
        'X-Nul: a\x00b',
        'X-Ctl: a\x01b',
        'X\x7fDel: v',
        'X-Tab:\tv\t',
        'X-Ws:   v   ',
      ]),
    );
  }
  if (random.chance(0.03)) fields.push(`X-Huge: ${'h'.repeat(random.int(MAX_HEAD_BYTES - 400, MAX_HEAD_BYTES + 400))}`);
  if (random.chance(0.03)) {
    const many = random.int(100, 700);
    for (let index = 0; index < many; index += 1) fields.push(`X-Many-${index}: ${token(random, 8)}`);
  }
  for (let index = fields.length - 1; index > 0; index -= 1) {
    const other = random.int(0, index);
    [fields[index], fields[other]] = [fields[other]!, fields[index]!];
  }
  head += fields.map((field) => field + eol()).join('') + eol();
  let answer = head;
  if (framing === 'chunked' || ((framing === 'both' || framing === 'te-list') && random.chance(0.7))) {
    answer += chunkedBody(random, body, eol, sound);
  } else {
    answer += body.toString('latin1');
  }
  let bytes: Buffer = Buffer.from(answer, 'latin1');
  if (sound) return bytes;
  if (random.chance(0.25)) bytes = mutateBytes(random, bytes);
  if (random.chance(0.1)) bytes = bytes.subarray(0, random.int(0, bytes.length));
  if (random.chance(0.05)) bytes = Buffer.concat([bytes, Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n')]);
  return bytes;
}

function split(random: Random, bytes: Buffer): Buffer[] {
  const cuts = [
    ...new Set(Array.from({ length: random.int(0, 3) }, () => random.int(1, Math.max(1, bytes.length - 1)))),
  ];
  cuts.sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const cut of cuts) {
    if (cut <= from || cut >= bytes.length) continue;
    pieces.push(bytes.subarray(from, cut));
    from = cut;
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}

/** Our reader alone on `bytes` in the pieces `cuts` make: what it gave (head, body) or the error's message. */
function readSplit(method: string, bytes: Buffer, cuts: readonly number[]): string {
  let head: AnswerHead | undefined;
  const body: Buffer[] = [];
  const reader = new AnswerReader(method, { onHead: (answer) => (head = answer), onBody: (chunk) => body.push(chunk) });
  try {
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      if (reader.push(bytes.subarray(from, cut))) break;
      from = cut;
    }
    if (!reader.done) reader.end();
    return JSON.stringify({ head, body: Buffer.concat(body).toString('latin1') });
  } catch (error) {
    return `refused: ${(error as Error).message}`;
  }
}

/** Lower-case names, repeated fields joined with ", " (what our HttpResponse.headers holds). */
function joinFields(raw: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = raw[index]!.toLowerCase();
    headers[name] = headers[name] === undefined ? raw[index + 1]! : `${headers[name]}, ${raw[index + 1]}`;
  }
  return headers;
}

function viaNode(port: number, path: string, method: string): Promise<Outcome> {
  return new Promise((resolve) => {
    let settled = false;
    /** The answer once llhttp has read all of it: an error on bytes after it (the next answer's) does not undo it. */
    let answer: { complete: boolean } | undefined;
    const settle = (outcome: Outcome): void => {
      if (!settled) resolve(outcome);
      settled = true;
    };
    const request = nodeRequest(
      { host: '127.0.0.1', port, path, method, agent: false, maxHeaderSize: 4 * MAX_HEAD_BYTES, timeout: 5000 },
      (response) => {
        const body: Buffer[] = [];
        answer = response;
        response.on('data', (chunk: Buffer) => body.push(chunk));
        response.on('error', (error) => settle({ kind: 'refused', reason: `node: ${error.message}` }));
        response.on('end', () => {
          if (!response.complete) return settle({ kind: 'refused', reason: 'node: incomplete' });
          settle({
            kind: 'answer',
            status: response.statusCode ?? 0,
            headers: joinFields(response.rawHeaders),
            body: Buffer.concat(body).toString('latin1'),
          });
        });
        response.on('close', () => settle({ kind: 'refused', reason: 'node: closed before the end' }));
      },
    );
    request.on('upgrade', (_response, socket: Socket) => {
      socket.destroy();
      settle({ kind: 'refused', reason: 'node: upgrade' });
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', (error) => {
      if (answer?.complete !== true) settle({ kind: 'refused', reason: `node: ${error.message}` });
    });
    request.end();
  });
}

async function viaSeam(port: number, path: string, method: 'GET' | 'HEAD'): Promise<Outcome> {
  const client = createHttpClient({ timeoutMs: 5000, maxResponseBytes: 1024 * 1024 });
  try {
    const answer = await client.send({ method, url: `http://127.0.0.1:${port}${path}` });
    return { kind: 'answer', status: answer.status, headers: answer.headers, body: answer.body.toString('latin1') };
  } catch (error) {
    if (!isHttpFailure(error)) throw error;
    return { kind: 'refused', reason: `ours: ${error.kind} ${error.code ?? ''} ${error.message}` };
  } finally {
    await client.close();
  }
}

const describeOutcome = (outcome: Outcome): string =>
  outcome.kind === 'refused' ? outcome.reason : JSON.stringify(outcome).slice(0, 400);

export function http1Target(): FuzzTarget<AnswerCase> {
  return {
    name: 'http1',
    concurrency: 8,
    async open(): Promise<FuzzSession<AnswerCase>> {
      const answers = new Map<string, Buffer[]>();
      const server = createServer((socket) => {
        let received = '';
        socket.on('error', () => undefined);
        socket.on('data', async (chunk: Buffer) => {
          received += chunk.toString('latin1');
          if (!received.includes('\r\n\r\n')) return;
          const id = /^[A-Z]+ \/case\/(\d+)/.exec(received)?.[1];
          received = '';
          const pieces = id === undefined ? undefined : answers.get(id);
          if (pieces === undefined) return void socket.destroy();
          socket.setNoDelay(true);
          for (const [index, piece] of pieces.entries()) {
            if (index > 0) await new Promise((resolve) => setImmediate(resolve));
            if (!socket.destroyed) socket.write(piece);
          }
          socket.end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      let next = 0;
      const tally = new Tally();

      const check = async (input: AnswerCase): Promise<string | undefined> => {
        const bytes = Buffer.concat(input.pieces);
        const ids = [String(next++), String(next++)];
        for (const id of ids) answers.set(id, input.pieces);
        const [ours, theirs] = await Promise.all([
          viaSeam(port, `/case/${ids[0]}`, input.method),
          viaNode(port, `/case/${ids[1]}`, input.method),
        ]);
        for (const id of ids) answers.delete(id);
        const whole = readSplit(input.method, bytes, []);
        // Byte by byte (or, for huge heads, 64 bytes at a time: each piece re-scans what is buffered).
        const step = bytes.length <= 4096 ? 1 : 64;
        const splits = [Array.from({ length: Math.ceil(bytes.length / step) }, (_, at) => at * step)];
        if (input.everySplit) for (let at = 1; at < bytes.length; at += 1) splits.push([at]);
        for (const cuts of splits) {
          const piecewise = readSplit(input.method, bytes, cuts);
          const where = cuts.length === 1 ? `cut at byte ${cuts[0]}` : `fed ${step} byte(s) at a time`;
          if (piecewise !== whole) return `${where}: ${piecewise.slice(0, 200)}, whole: ${whole.slice(0, 200)}`;
        }
        if (ours.kind === 'refused' && theirs.kind === 'refused') return void tally.add('both refuse');
        if (ours.kind === 'refused') {
          const text = bytes.toString('latin1');
          const listed = OUR_REFUSALS.find((refusal) => refusal.applies(text, ours.reason));
          if (listed !== undefined) return void tally.add(`listed: ${listed.name}`);
          return `we refuse (${ours.reason}), llhttp reads ${describeOutcome(theirs)}`;
        }
        if (theirs.kind === 'refused') return `we read ${describeOutcome(ours)}, llhttp refuses (${theirs.reason})`;
        if (JSON.stringify(ours) !== JSON.stringify(theirs)) {
          return `we read ${describeOutcome(ours)}, llhttp reads ${describeOutcome(theirs)}`;
        }
        return void tally.add('both read, same');
      };

      return {
        generate: (random) => {
          const bytes = generateAnswer(random);
          const method = random.chance(0.05) ? 'HEAD' : 'GET';
          return { method, pieces: split(random, bytes), everySplit: bytes.length <= 2000 && random.chance(0.25) };
        },
        check,
        *shrink(input) {
          const bytes = Buffer.concat(input.pieces);
          if (input.pieces.length > 1) yield { ...input, pieces: [bytes] };
          const text = bytes.toString('latin1');
          const lines = text.split(/(?<=\n)/);
          for (let index = 0; index < lines.length; index += 1) {
            const without = [...lines.slice(0, index), ...lines.slice(index + 1)].join('');
            yield { ...input, pieces: [Buffer.from(without, 'latin1')] };
          }
          for (let size = Math.floor(bytes.length / 2); size >= 1; size = Math.floor(size / 2)) {
            for (let from = 0; from + size <= bytes.length; from += size) {
              yield { ...input, pieces: [Buffer.concat([bytes.subarray(0, from), bytes.subarray(from + size)])] };
            }
          }
        },
        serialize: (input) => ({ bytes: Buffer.concat(input.pieces), extension: `${input.method.toLowerCase()}.http` }),
        summary: () => tally.toString(),
        close: () => new Promise((resolve) => server.close(() => resolve())),
      };
    },
  };
}
