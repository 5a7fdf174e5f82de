/**
 * Making connections: a socket to an origin (TCP, TLS with the client's trust store and certificate) directly or
 * through a proxy (a connection to the proxy, the tunnel, TLS to the origin inside it), each bounded by a connect
 * deadline. The sockets still connecting are known, so that a send that gives up can tear them down.
 *
 * Built-ins (node:net, node:tls) are taken when the first connection is made, not on import.
 */
import type { Socket } from 'node:net';
import { connectHost, portOf, type Route } from './route.js';
import type { NodeTlsOptions } from './tls.js';
import { httpConnect, socksConnect } from './tunnels.js';

/** Makes one client's connections. */
export class Connector {
  readonly #tls: NodeTlsOptions;
  readonly #connectTimeout: () => number;
  /** Sockets still connecting (TCP, proxy tunnel or TLS): torn down when every send waiting for them gave up. */
  readonly #connecting = new Set<Socket>();

  /** `connectTimeout`: how long a connection begun now may take (ms). */
  constructor(tls: NodeTlsOptions, connectTimeout: () => number) {
    this.#tls = tls;
    this.#connectTimeout = connectTimeout;
  }

  /** Tears down every socket still connecting. */
  dropConnecting(): void {
    for (const socket of this.#connecting) socket.destroy(new Error('the send was abandoned (deadline or abort)'));
    this.#connecting.clear();
  }

  /**
   * A socket to `origin` (TLS for https) along `route`. A direct one is returned at once, still connecting (what is
   * written waits for the connection), so the caller can listen for its errors at once; a tunnel when it is through.
   */
  open(origin: URL, route: Route): Socket | Promise<Socket> {
    const net = process.getBuiltinModule('node:net');
    const secure = origin.protocol === 'https:';
    if (route.kind === 'direct') {
      return secure
        ? this.#within(this.#secureTo(origin), 'secureConnect')
        : this.#within(net.connect({ host: connectHost(origin), port: portOf(origin), noDelay: true }), 'connect');
    }
    // Through a proxy: a connection to it (TLS with the system roots for an https:// proxy), the tunnel, then TLS to
    // the origin inside it.
    const proxyHost = connectHost(route.proxy);
    const overTls = route.proxy.protocol === 'https:';
    const toProxy: Socket = overTls
      ? process.getBuiltinModule('node:tls').connect({
          host: proxyHost,
          port: portOf(route.proxy),
          ...(net.isIP(proxyHost) === 0 ? { servername: proxyHost } : {}),
        })
      : net.connect({ host: proxyHost, port: portOf(route.proxy), noDelay: true });
    // Its errors reach whoever reads it (the tunnel's steps, then the TLS socket over it); none may go uncaught.
    toProxy.on('error', () => undefined);
    // Connecting lasts until the tunnel is through: one deadline for the proxy connection and the tunnel.
    this.#connecting.add(toProxy);
    const timer = setTimeout(
      () =>
        toProxy.destroy(
          Object.assign(new Error('no tunnel through the proxy within the deadline'), { code: 'ETIMEDOUT' }),
        ),
      this.#connectTimeout(),
    );
    const tunnel = async (): Promise<Socket> => {
      try {
        await new Promise<void>((resolve, reject) => {
          toProxy.once(overTls ? 'secureConnect' : 'connect', () => resolve());
          toProxy.once('error', reject);
        });
        const host = connectHost(origin);
        const port = portOf(origin);
        if (route.kind === 'socks') await socksConnect(toProxy, route.proxy, host, port);
        else await httpConnect(toProxy, host, port, route.authorization);
      } finally {
        clearTimeout(timer);
        this.#connecting.delete(toProxy);
      }
      toProxy.resume();
      if (!secure) return toProxy;
      const inner = this.#within(this.#secureTo(origin, toProxy), 'secureConnect');
      await new Promise<void>((resolve, reject) => {
        inner.once('secureConnect', () => resolve());
        inner.once('error', reject);
      });
      return inner;
    };
    return tunnel().catch((error: unknown) => {
      toProxy.destroy();
      throw error;
    });
  }

  /** Counts `socket` as connecting until `event` (or its end), and ends it when the connect deadline passes first. */
  #within<T extends Socket>(socket: T, event: 'connect' | 'secureConnect'): T {
    this.#connecting.add(socket);
    const timer = setTimeout(
      () => socket.destroy(Object.assign(new Error('no connection within the deadline'), { code: 'ETIMEDOUT' })),
      this.#connectTimeout(),
    );
    const done = (): void => {
      clearTimeout(timer);
      this.#connecting.delete(socket);
    };
    socket.once(event, done);
    socket.once('close', done);
    return socket;
  }

  /** TLS to `origin` as configured (trusted CAs, client certificate, server name), over `socket` when given. */
  #secureTo(origin: URL, socket?: Socket): Socket {
    const { isIP } = process.getBuiltinModule('node:net');
    const { connect } = process.getBuiltinModule('node:tls');
    const tls = this.#tls;
    const host = connectHost(origin);
    // SNI and the name verified: the configured server name, else the URL's host (an IP is verified, not sent).
    const servername = tls.servername ?? (isIP(host) === 0 ? host : undefined);
    const secured = connect({
      host,
      port: portOf(origin),
      ...(socket === undefined ? {} : { socket }),
      ...(tls.ca === undefined ? {} : { ca: tls.ca, allowPartialTrustChain: tls.allowPartialTrustChain === true }),
      ...(tls.cert === undefined ? {} : { cert: tls.cert }),
      ...(tls.key === undefined ? {} : { key: tls.key }),
      ...(servername === undefined ? {} : { servername }),
      rejectUnauthorized: tls.rejectUnauthorized,
    });
    return secured.setNoDelay(true);
  }
}
