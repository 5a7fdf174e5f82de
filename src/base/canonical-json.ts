/**
 * JSON with object keys sorted at every level and `undefined` members dropped: equal inputs give equal text, so it
 * keys caches (the library's exec credential cache, the plugins' on-disk cache).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return item;
    const sorted: Record<string, unknown> = {};
    for (const name of Object.keys(item).sort()) sorted[name] = (item as Record<string, unknown>)[name];
    return sorted;
  });
}
