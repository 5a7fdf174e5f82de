/**
 * The schema check of `spec.cluster.config` (schemas/oidc-config.schema.json), imported lazily by settings.ts on a
 * cache miss: that schema's validator alone and the issue wording, one module.
 */
import * as schema from '../../generated/validator.oidc-config.js';
import { validateWith, type SchemaIssue } from '../../schemas/issues.js';

/** The problems of `config` against the schema; none when it is valid. */
export function oidcConfigIssues(config: Record<string, unknown>): readonly SchemaIssue[] {
  return validateWith(schema, 'oidc-config', config);
}
