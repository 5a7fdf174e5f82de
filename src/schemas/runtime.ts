// The few helpers the precompiled validators (src/generated/validators.ts) call, as ESM: ajv's own runtime modules
// are CommonJS with a `default` export, which Node and esbuild import differently, so the generator points the
// generated code here instead. Nothing of ajv is loaded at run time.
export { formats } from './formats.js';

/** An ajv error object, as the generated validators report it. */
export interface ValidatorError {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** A precompiled validator: returns true when `data` is valid; otherwise `errors` lists why. */
export interface CompiledValidator {
  (data: unknown): boolean;
  errors?: ValidatorError[] | null;
}

const surrogate = /[\ud800-\udfff]/;

/** Appends one error to a validator's list (null when empty so far) and returns the list. */
export function pushError(
  list: ValidatorError[] | null,
  instancePath: string,
  schemaPath: string,
  keyword: string,
  params: Record<string, unknown>,
): ValidatorError[] {
  const error = { instancePath, schemaPath, keyword, params };
  if (list === null) {
    return [error];
  }
  list.push(error);
  return list;
}

/** The length of a string in Unicode code points (what JSON Schema's minLength/maxLength count). */
export function ucs2length(value: string): number {
  if (!surrogate.test(value)) {
    return value.length; // the common case, checked natively (a token can be kilobytes long)
  }
  let length = 0;
  for (let index = 0; index < value.length; index++) {
    const code = value.charCodeAt(index);
    if (code >= 0xd800 && code <= 0xdbff && index + 1 < value.length) {
      const next = value.charCodeAt(index + 1);
      if ((next & 0xfc00) === 0xdc00) {
        index++;
      }
    }
    length++;
  }
  return length;
}

/** Deep equality of JSON values (for `enum`/`const` with objects and `uniqueItems`). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return Number.isNaN(a) && Number.isNaN(b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) {
    return false;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, index) => deepEqual(item, b[index]));
  }
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  return (
    keysA.length === keysB.length &&
    keysA.every(
      (key) =>
        Object.hasOwn(b, key) && deepEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
    )
  );
}

/**
 * For `x-kubernetes-list-map-keys`: the indexes of the first two items of `list` with the same values of `keys`, or
 * null. Items that are not objects are left to the `type` check.
 */
export function findDuplicateListMapKey(list: readonly unknown[], keys: readonly string[]): [number, number] | null {
  const seen = new Map<string, number>();
  for (const [index, item] of list.entries()) {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      continue;
    }
    const record = item as Record<string, unknown>;
    const single = keys.length === 1 ? record[keys[0]!] : undefined;
    // One string key (the usual case: name, type) needs no serialisation.
    const key = typeof single === 'string' ? `s:${single}` : JSON.stringify(keys.map((name) => record[name] ?? null));
    const first = seen.get(key);
    if (first !== undefined) {
      return [first, index];
    }
    seen.set(key, index);
  }
  return null;
}
