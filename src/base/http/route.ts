/**
 * Which way a request reaches its origin: directly, through an HTTP(S) proxy, or through a SOCKS5 proxy — the
 * configured proxy unless NO_PROXY exempts the host — and the host and port a socket connects to.
 */
import { withoutUserinfo } from '../errors.js';
import { HttpFailure } from './failures.js';

/**
 * An explicit proxy: requests go through `url` — `http://` or `https://` (a CONNECT tunnel for https targets, the
 * absolute URL for http ones; userinfo becomes Proxy-Authorization) or `socks5://` (`socks://`, `socks5h://`; the
 * host name is resolved by the proxy) — except to hosts `noProxy` exempts (NO_PROXY syntax: `*`, names and their
 * subdomains, `.suffix`, `*.suffix`, optional `:port`). The environment is never read here: callers that honour
 * HTTPS_PROXY pass it in.
 */
export interface ProxyOptions {
  url: string;
  noProxy?: string;
}

/** How a request reaches its origin: directly, through an HTTP(S) proxy, or through a SOCKS5 proxy. */
export type Route =
  | { kind: 'direct' }
  | { kind: 'http-proxy' | 'socks'; proxy: URL; authorization: string | undefined };

const DEFAULT_PORTS: Record<string, number> = {
  'http:': 80,
  'https:': 443,
  'socks:': 1080,
  'socks5:': 1080,
  'socks5h:': 1080,
};

/** `host` of a URL for connecting: without the brackets of an IPv6 literal. */
export const connectHost = (url: URL): string => url.hostname.replace(/^\[(.+)\]$/, '$1');
/** The port of a URL, its scheme's default when it names none. */
export const portOf = (url: URL): number => Number(url.port) || DEFAULT_PORTS[url.protocol]!;

interface NoProxyEntry {
  hostname: string;
  port: number;
  wildcard: boolean;
}

/** NO_PROXY entries: comma or space separated `host`, `.suffix`, `*.suffix`, `host:port`, `[v6]:port`, `*`. */
function parseNoProxy(value: string): NoProxyEntry[] {
  return value
    .split(/[,\s]/)
    .filter((entry) => entry !== '')
    .map((entry) => {
      const bracketed = /^\[(.+)\]:(\d+)$/.exec(entry);
      let hostname: string;
      let port = 0;
      if (bracketed !== null) {
        hostname = bracketed[1]!;
        port = Number(bracketed[2]);
      } else {
        const unbracketed = entry.replace(/^\[(.+)\]$/, '$1');
        const withPort = (unbracketed.match(/:/g) ?? []).length === 1 ? /^(.+):(\d+)$/.exec(unbracketed) : null;
        hostname = withPort === null ? unbracketed : withPort[1]!;
        port = withPort === null ? 0 : Number(withPort[2]);
      }
      return {
        hostname: hostname
          .replace(/^\*?\./, '')
          .replace(/^(.+)\.$/, '$1')
          .toLowerCase(),
        port,
        wildcard: entry.startsWith('*'),
      };
    });
}

/** Whether NO_PROXY exempts `url`: `*`, the host itself (not for `*.` entries), or a subdomain of an entry. */
function exempt(entries: readonly NoProxyEntry[], url: URL): boolean {
  let hostname = url.hostname.replace(/^\[(.+)\]$/, '$1').toLowerCase();
  if (hostname.length > 1 && hostname.endsWith('.')) hostname = hostname.slice(0, -1);
  const port = Number(url.port) || DEFAULT_PORTS[url.protocol] || 0;
  return entries.some(
    (entry) =>
      (entry.port === 0 || entry.port === port) &&
      (entry.hostname === '*' ||
        (!entry.wildcard && hostname === entry.hostname) ||
        hostname.endsWith(`.${entry.hostname}`)),
  );
}

function proxyAuthorization(proxy: URL): string | undefined {
  if (proxy.username === '' && proxy.password === '') return undefined;
  return `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString('base64')}`;
}

/**
 * The routing of one client: a function from a request URL to its {@link Route}. A bad proxy URL is the failure of
 * the send that needs it (kind `url`), not of the client's creation.
 */
export function createRouter(proxy: ProxyOptions | undefined): (url: URL) => Route {
  const noProxy = parseNoProxy(proxy?.noProxy ?? '');
  return (url) => {
    if (proxy === undefined || exempt(noProxy, url)) return { kind: 'direct' };
    let proxyUrl: URL;
    try {
      proxyUrl = new URL(proxy.url);
    } catch (cause) {
      throw new HttpFailure('url', `the proxy URL ${JSON.stringify(withoutUserinfo(proxy.url))} is not a URL`, {
        url: url.href,
        target: url.href,
        cause,
      });
    }
    if (/^socks5?h?:$/.test(proxyUrl.protocol)) return { kind: 'socks', proxy: proxyUrl, authorization: undefined };
    if (proxyUrl.protocol !== 'http:' && proxyUrl.protocol !== 'https:') {
      throw new HttpFailure('url', `the proxy URL ${withoutUserinfo(proxy.url)} must be http, https or socks5`, {
        url: url.href,
        target: url.href,
      });
    }
    return { kind: 'http-proxy', proxy: proxyUrl, authorization: proxyAuthorization(proxyUrl) };
  };
}
