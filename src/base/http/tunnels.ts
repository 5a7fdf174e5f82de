/**
 * Tunnels through a proxy, over a connection already made to it: HTTP CONNECT (RFC 9110 §9.3.6, with
 * Proxy-Authorization when the proxy URL has userinfo) and SOCKS5 CONNECT (RFC 1928, with RFC 1929 username and
 * password). When a tunnel is through, the socket is left paused, carrying the bytes to the origin and nothing else.
 * Their errors are `ProxyConnectionError`s, which `failures.ts` classifies as kind `proxy`.
 */
import type { Socket } from 'node:net';
import { ipv6Bytes } from '../ip.js';
import { headLength, parseStatusLine } from './http1.js';

function proxyError(message: string, cause?: unknown): Error {
  const error = new Error(message, cause === undefined ? undefined : { cause });
  error.name = 'ProxyConnectionError';
  return error;
}

/**
 * Reads one message from a socket: `take` looks at what has arrived and says how many bytes the message is (undefined:
 * not complete yet; an Error: refuse it). The bytes after the message are pushed back and the socket is left paused
 * for whoever reads next (the TLS layer, or the next step of a proxy handshake).
 */
function readMessage(
  socket: Socket,
  take: (buffered: Buffer) => number | Error | undefined,
  closed: string,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const cleanup = (): void => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const onClose = (): void => onError(proxyError(closed));
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const length = take(buffered);
      if (length === undefined) return;
      if (length instanceof Error) {
        onError(length);
        return;
      }
      cleanup();
      socket.pause();
      if (buffered.length > length) socket.unshift(buffered.subarray(length));
      resolve(buffered.subarray(0, length));
    };
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.resume();
  });
}

/** Reads an HTTP response head (up to the blank line) from a socket; the bytes after it are pushed back. */
async function readResponseHead(socket: Socket): Promise<{ status: number }> {
  const head = await readMessage(
    socket,
    (buffered) => {
      try {
        return headLength(buffered);
      } catch {
        return proxyError('the proxy answered CONNECT with an endless header');
      }
    },
    'the proxy closed the connection during CONNECT',
  );
  const status = parseStatusLine(head.toString('latin1').split('\r\n', 1)[0]!);
  if (status === undefined) throw proxyError('the proxy answered CONNECT with something other than HTTP');
  return { status: status.status };
}

/** HTTP CONNECT to `host:port`; `authorization` is the Proxy-Authorization value, if any. */
export async function httpConnect(
  socket: Socket,
  host: string,
  port: number,
  authorization: string | undefined,
): Promise<void> {
  const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const proxyAuthorization = authorization === undefined ? '' : `Proxy-Authorization: ${authorization}\r\n`;
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${proxyAuthorization}\r\n`);
  const { status } = await readResponseHead(socket);
  if (status !== 200) throw proxyError(`Proxy response (${status}) !== 200 when HTTP Tunneling`);
}

/** Reads exactly `length` bytes (SOCKS5 replies). */
function readBytes(socket: Socket, length: number): Promise<Buffer> {
  return readMessage(
    socket,
    (buffered) => (buffered.length >= length ? length : undefined),
    'the SOCKS proxy closed the connection',
  );
}

const SOCKS_REPLIES: Record<number, string> = {
  1: 'general failure',
  2: 'connection not allowed by ruleset',
  3: 'network unreachable',
  4: 'host unreachable',
  5: 'connection refused',
  6: 'TTL expired',
  7: 'command not supported',
  8: 'address type not supported',
};

/** RFC 1928 CONNECT (with RFC 1929 username/password when the proxy URL has them) to `host:port`. */
export async function socksConnect(socket: Socket, proxy: URL, host: string, port: number): Promise<void> {
  const username = decodeURIComponent(proxy.username);
  const password = decodeURIComponent(proxy.password);
  const withPassword = username !== '' || password !== '';
  socket.write(Buffer.from(withPassword ? [5, 2, 0, 2] : [5, 1, 0]));
  const [version, method] = await readBytes(socket, 2);
  if (version !== 5) throw proxyError('the proxy does not speak SOCKS5');
  if (method === 2 && withPassword) {
    const user = Buffer.from(username);
    const pass = Buffer.from(password);
    socket.write(Buffer.concat([Buffer.from([1, user.length]), user, Buffer.from([pass.length]), pass]));
    const [, status] = await readBytes(socket, 2);
    if (status !== 0) throw proxyError('the SOCKS proxy refused the username and password');
  } else if (method !== 0) {
    throw proxyError(
      withPassword
        ? 'the SOCKS proxy accepts no authentication we offer'
        : 'the SOCKS proxy wants a username and password',
    );
  }
  const { isIP } = process.getBuiltinModule('node:net');
  const family = isIP(host);
  let address: Buffer;
  if (family === 4) {
    address = Buffer.from([1, ...host.split('.').map(Number)]);
  } else if (family === 6) {
    address = Buffer.concat([Buffer.from([4]), ipv6Bytes(host)]);
  } else {
    const name = Buffer.from(host);
    address = Buffer.concat([Buffer.from([3, name.length]), name]);
  }
  const portBytes = Buffer.from([port >> 8, port & 0xff]);
  socket.write(Buffer.concat([Buffer.from([5, 1, 0]), address, portBytes]));
  const reply = await readBytes(socket, 4);
  if (reply[1] !== 0)
    throw proxyError(`the SOCKS proxy could not connect: ${SOCKS_REPLIES[reply[1]!] ?? `reply ${reply[1]}`}`);
  const boundLength = reply[3] === 1 ? 4 : reply[3] === 4 ? 16 : (await readBytes(socket, 1))[0]!;
  await readBytes(socket, boundLength + 2);
}
