/**
 * The one test for a JSON object (a mapping, not an array or null) among parsed values: documents, kubeconfigs,
 * ClusterProfile fields, exec plugin output. Pure, no imports: it sits on the plugin's cache-hit path.
 */

/** True for a non-null object that is not an array: what a parsed JSON/YAML mapping is. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
