// The string formats the schemas may use, with Go's semantics (the other side of every wire format here is Go).
// scripts/compile-schemas.mjs imports this file directly (Node strips the types), so it must stay import-free.

/** A format as the precompiled validators call it (`type`: which JSON values it applies to). */
export type SchemaFormat =
  | { readonly type: 'string'; validate(value: string): boolean }
  | { readonly type: 'number'; validate(value: number): boolean };

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?(?:Z|([+-])(\d{2}):(\d{2}))$/;

function daysIn(year: number, month: number): number {
  if (month === 2) {
    const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
    return leap ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * RFC 3339 as Go's `time.Parse(time.RFC3339, s)` reads it (metav1.Time, e.g. ExecCredential
 * `status.expirationTimestamp`): upper-case `T` and `Z`, a real calendar day, no leap second (Go rejects `:60`),
 * offsets within ±23:59, any number of fractional digits after `.` or `,` (Go drops what is beyond nanoseconds).
 * Unlike ajv-formats' `date-time`, a space or a lower-case `t`/`z` is refused, as Go refuses them. (Go's fallback
 * parser also takes one-digit hours and offsets of 24 hours or more; those oddities are refused here.)
 */
export function isRfc3339DateTime(value: string): boolean {
  const match = rfc3339.exec(value);
  if (match === null) {
    return false;
  }
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) {
    return false;
  }
  if (hour > 23 || minute > 59 || second > 59) {
    return false;
  }
  if (match[7] !== undefined && (Number(match[8]) > 23 || Number(match[9]) > 59)) {
    return false;
  }
  return true;
}

/** Every format name a schema in `schemas/` may use. Add one here to make it available to all schemas. */
export const formats: Readonly<Record<string, SchemaFormat>> = {
  'date-time': { type: 'string', validate: isRfc3339DateTime },
  // Kubernetes' integer formats (metav1.Condition observedGeneration): a whole number in range.
  int32: { type: 'number', validate: (value) => Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31 },
  int64: { type: 'number', validate: (value) => Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63 },
};
