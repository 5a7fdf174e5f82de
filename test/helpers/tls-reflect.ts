// The three Reflect metadata functions tsyringe (a dependency of @peculiar/x509) insists on, installed only when
// absent. Imported for its side effect by ./tls.ts before '@peculiar/x509' is evaluated, so the test helper does
// not depend on a provider's internals.
const tables = new WeakMap<object, Map<string, unknown>>();
const slot = (key: unknown, property: unknown): string => `${String(property)}\u0000${String(key)}`;
interface ReflectMetadata {
  defineMetadata?(key: unknown, value: unknown, target: object, property?: string | symbol): void;
  getOwnMetadata?(key: unknown, target: object, property?: string | symbol): unknown;
  getMetadata?(key: unknown, target: object, property?: string | symbol): unknown;
}
const reflect = Reflect as unknown as ReflectMetadata;
reflect.defineMetadata ??= (key, value, target, property) => {
  const table = tables.get(target) ?? new Map<string, unknown>();
  tables.set(target, table);
  table.set(slot(key, property), value);
};
reflect.getOwnMetadata ??= (key, target, property) => tables.get(target)?.get(slot(key, property));
reflect.getMetadata ??= (key, target, property) => {
  for (let o: object | null = target; o !== null; o = Object.getPrototypeOf(o) as object | null) {
    const value = reflect.getOwnMetadata!(key, o, property);
    if (value !== undefined) return value;
  }
  return undefined;
};
export {};
