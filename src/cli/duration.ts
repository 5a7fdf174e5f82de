/**
 * Go-style durations for flags (`24h`, `90m`, `1h30m`, `45s`, `500ms`, `7d`), as kubectl and the Go tools write them.
 */
import { CredentialsError, type ErrorCode } from '../base/errors.js';

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * The duration in milliseconds, within [min, max]; otherwise a {@link CredentialsError} with `code` whose path is
 * the flag.
 *
 * @example parseDuration('1h30m', { flag: '--interval', min: 1000, max: 86_400_000, code: 'ERR_USAGE' }) // 5_400_000
 */
export function parseDuration(text: string, o: { flag: string; min: number; max: number; code: ErrorCode }): number {
  const parts = /^(?:\d+(?:ms|s|m|h|d))+$/.test(text) ? [...text.matchAll(/(\d+)(ms|s|m|h|d)/g)] : [];
  if (parts.length === 0) {
    throw new CredentialsError(o.code, `${o.flag} ${JSON.stringify(text)} is not a duration (e.g. 24h, 90m, 45s)`, {
      path: o.flag,
    });
  }
  const ms = parts.reduce((sum, [, n, unit]) => sum + Number(n) * (UNITS[unit ?? 's'] ?? 0), 0);
  if (ms < o.min || ms > o.max) {
    throw new CredentialsError(o.code, `${o.flag} ${text} is outside [${o.min / 1000}s, ${o.max / 1000}s]`, {
      path: o.flag,
    });
  }
  return ms;
}
