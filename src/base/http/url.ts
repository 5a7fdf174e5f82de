/**
 * The URL a request goes to: an http(s) URL checked up front (a failure of kind `url`, quoted without userinfo), or a
 * base URL with a path and query appended; and the target a failure names.
 */
import { clip, quoteUrl, redactUrl } from '../errors.js';
import { HttpFailure } from './failures.js';

/** Where a request goes: an absolute URL, or with `base` a path and query appended to the base URL's path. */
export interface RequestTarget {
  url: string | URL;
  base?: string | URL;
}

/** What "cannot reach X" names: the base URL when the request has one, else its URL. */
export function targetOf(request: RequestTarget): string {
  return String(request.base ?? request.url);
}

/**
 * Parses an http(s) URL, or throws an {@link HttpFailure} of kind `url` quoting it without userinfo. Synchronous
 * and free of any network code: adapters check configured URLs up front with it.
 */
export function parseHttpUrl(value: string | URL, what = 'the URL'): URL {
  const text = String(value);
  let url: URL;
  try {
    url = new URL(text);
  } catch (cause) {
    throw new HttpFailure('url', `${what} ${quoteUrl(text)} is not a URL`, { url: text, target: text, cause });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new HttpFailure('url', `${what} ${clip(redactUrl(text))} must be https`, { url: text, target: text });
  }
  return url;
}

/** The absolute URL of a request: `url`, or `base` with `url` (path and query) appended to its path. */
export function requestUrl(request: RequestTarget): URL {
  if (request.base === undefined) return parseHttpUrl(request.url);
  const base = parseHttpUrl(request.base);
  const url = new URL(base);
  const [pathname, query] = String(request.url).split('?', 2) as [string, string | undefined];
  url.pathname = base.pathname.replace(/\/+$/, '') + pathname;
  url.search = query === undefined ? '' : `?${query}`;
  return url;
}
