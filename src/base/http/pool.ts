/**
 * The connection pool of one client: per origin, any number of kept-alive connections waiting for the next request.
 * An idle connection is unref'd (it never keeps the process alive) and dropped when the server closes it, speaks
 * unasked, or its idle time — the server's `Keep-Alive: timeout`, less a second — runs out. Every connection made
 * is known until it closes, so that closing the client ends them all.
 */
import type { Socket } from 'node:net';
import type { Route } from './route.js';

/** The pool of an origin: scheme, host and port. */
const keyOf = (origin: URL): string => `${origin.protocol}//${origin.host}`;

/** Connections of one client, kept alive per origin. */
export class Pool {
  readonly #open: (origin: URL, route: Route) => Socket | Promise<Socket>;
  /** Kept-alive connections waiting for a request, per origin, each with the function that takes it out. */
  readonly #idle = new Map<string, Map<Socket, () => void>>();
  /** Every connection made and not closed yet. */
  readonly #all = new Set<Socket>();

  /** `open` makes a new connection (see `connect.ts`). */
  constructor(open: (origin: URL, route: Route) => Socket | Promise<Socket>) {
    this.#open = open;
  }

  /**
   * A connection to `origin`: a kept-alive one when one is idle, else a new one (returned at once when direct, still
   * connecting; a promise for a tunnel).
   */
  acquire(origin: URL, route: Route): Socket | Promise<Socket> {
    for (const [socket, take] of this.#idle.get(keyOf(origin)) ?? []) {
      take();
      if (!socket.destroyed && socket.writable) return socket;
    }
    const track = (socket: Socket): Socket => {
      this.#all.add(socket);
      socket.once('close', () => this.#all.delete(socket));
      // Errors that come after an exchange gave up on the socket (a TLS socket reports a connection cut during its
      // handshake after its 'end') must not become uncaught exceptions; during an exchange its own listener has them.
      socket.on('error', () => undefined);
      return socket;
    };
    const made = this.#open(origin, route);
    return made instanceof Promise ? made.then(track) : track(made);
  }

  /**
   * Parks a connection to `origin` whose answer was read whole, for the next request there; `idleMs` is how long
   * the server said it keeps it.
   */
  release(origin: URL, socket: Socket, idleMs: number | undefined): void {
    const key = keyOf(origin);
    let pool = this.#idle.get(key);
    if (pool === undefined) {
      pool = new Map();
      this.#idle.set(key, pool);
    }
    const drop = (): void => {
      take();
      socket.destroy();
    };
    const timer = idleMs === undefined ? undefined : setTimeout(drop, Math.max(0, idleMs - 1000));
    timer?.unref();
    const take = (): void => {
      pool.delete(socket);
      clearTimeout(timer);
      socket.off('data', drop).off('end', drop).off('error', drop).off('close', drop);
      socket.ref();
    };
    socket.on('data', drop).on('end', drop).on('error', drop).on('close', drop);
    socket.setKeepAlive(true, 1000);
    socket.unref();
    pool.set(socket, take);
  }

  /** Ends every connection, idle or busy. */
  close(): void {
    for (const socket of this.#all) socket.destroy();
    this.#all.clear();
    this.#idle.clear();
  }
}
