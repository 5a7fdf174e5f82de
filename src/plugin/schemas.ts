/**
 * The authoritative check of KUBERNETES_EXEC_INFO against schemas/execcredential-input.<version>.schema.json, made on
 * a cache miss only (run.ts imports this module lazily). It loads the two exec-input validators alone, not the
 * module of every schema, many times larger, which a miss would pay for in memory and time.
 */
import type { ExecCredentialInput } from '../base/exec-credential.js';
import * as v1 from '../generated/validator.execcredential-input.v1.js';
import * as v1beta1 from '../generated/validator.execcredential-input.v1beta1.js';
import { assertWith } from '../schemas/issues.js';

/** Throws `ERR_PLUGIN_EXEC_INFO` with the JSON path of the first problem when `input` does not match its schema. */
export function assertExecInfo(input: ExecCredentialInput): void {
  const options = { code: 'ERR_PLUGIN_EXEC_INFO', what: 'KUBERNETES_EXEC_INFO' } as const;
  if (input.apiVersion.endsWith('/v1')) assertWith(v1, 'execcredential-input.v1', input, options);
  else assertWith(v1beta1, 'execcredential-input.v1beta1', input, options);
}
