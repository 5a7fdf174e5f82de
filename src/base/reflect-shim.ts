// Minimal Reflect metadata (only what tsyringe, a dependency of @peculiar/x509, calls). Imported for its side
// effect before '@peculiar/x509' is evaluated: by src/wire/tenant-cert/x509.ts, and first thing by the CLI (whose
// bundle imports @peculiar/x509 from node_modules, hoisted above any bundled code of the chunk). Keeps existing implementations.
type MetadataTable = Map<string, unknown>;
const tables = new WeakMap<object, MetadataTable>();
const slot = (key: unknown, property: unknown): string => `${String(property)}\u0000${String(key)}`;

interface ReflectMetadata {
  defineMetadata?(key: unknown, value: unknown, target: object, property?: string | symbol): void;
  getOwnMetadata?(key: unknown, target: object, property?: string | symbol): unknown;
  getMetadata?(key: unknown, target: object, property?: string | symbol): unknown;
}
const reflect = Reflect as unknown as ReflectMetadata;

reflect.defineMetadata ??= (key, value, target, property) => {
  let table = tables.get(target);
  if (table === undefined) {
    table = new Map();
    tables.set(target, table);
  }
  table.set(slot(key, property), value);
};
reflect.getOwnMetadata ??= (key, target, property) => tables.get(target)?.get(slot(key, property));
reflect.getMetadata ??= (key, target, property) => {
  for (let object: object | null = target; object !== null; object = Object.getPrototypeOf(object) as object | null) {
    const value = reflect.getOwnMetadata!(key, object, property);
    if (value !== undefined) {
      return value;
    }
  }
  return undefined;
};

export {};
