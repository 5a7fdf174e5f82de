/**
 * The providers file (`--clusterprofile-provider-file`): the controller operator's mapping from access-provider
 * names to exec plugins, in exactly cluster-inventory-api's format (`access.NewFromFile`). JSON as upstream; YAML is
 * accepted too.
 *
 * @see https://github.com/kubernetes/enhancements/tree/master/keps/sig-multicluster/5339-clusterprofile-plugin-credentials
 */
import { assertDocument } from '../schemas/index.js';
import { CredentialsError, type ErrorCodes } from '../base/errors.js';
import { parseDocument as readDocument, readDocumentText, readProblem } from '../base/document.js';
import type { AccessConfig, ExecConfig, ProviderConfig } from './types.js';

/** Codes raised while reading the providers file. */
export type AccessConfigErrorCode = ErrorCodes<
  'ERR_ACCESS_CONFIG_READ' | 'ERR_ACCESS_CONFIG_PARSE' | 'ERR_ACCESS_CONFIG_INVALID'
>;

/** The file system seam of {@link loadAccessConfig}: only what it uses. */
export interface AccessConfigFs {
  readFile(path: string, encoding: 'utf8'): Promise<string>;
}

/** Options of {@link loadAccessConfig}. */
export interface LoadAccessConfigOptions {
  /** Defaults to the file system (a file of at most 4 MiB). */
  fs?: AccessConfigFs;
}

/**
 * Reads and validates a providers file (JSON, or YAML).
 *
 * A file of `{}` is valid and yields no providers (as upstream). Errors are {@link CredentialsError}s:
 * `ERR_ACCESS_CONFIG_READ` (`failed to read access config file`, path = the file), `ERR_ACCESS_CONFIG_PARSE`
 * (`failed to unmarshal access providers`), `ERR_ACCESS_CONFIG_INVALID` (path = the JSON path of the first problem).
 *
 * @example
 * ```ts
 * import { loadAccessConfig, resolveClusterAccess } from 'clusterprofile-credentials';
 * const accessConfig = await loadAccessConfig('/etc/fleet/clusterprofile-provider-file.json');
 * const access = resolveClusterAccess(profile, accessConfig);
 * ```
 */
export async function loadAccessConfig(path: string, options: LoadAccessConfigOptions = {}): Promise<AccessConfig> {
  const fs = options.fs ?? { readFile: (file: string) => readDocumentText(file) };
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (cause) {
    const reason = readProblem(cause);
    throw new CredentialsError<AccessConfigErrorCode>(
      'ERR_ACCESS_CONFIG_READ',
      `failed to read access config file ${path}: ${reason}`,
      { path, cause, hint: 'pass the providers file with --clusterprofile-provider-file' },
    );
  }
  return parseAccessConfig(text, path);
}

/**
 * Parses and validates the text of a providers file, for callers that already hold the bytes (a ConfigMap, a
 * mounted Secret). `source` names the origin in error messages. Returns a new object; `providers` is always present.
 *
 * @example
 * ```ts
 * const accessConfig = parseAccessConfig(configMap.data['providers.json'], 'configmap fleet/providers');
 * ```
 */
export function parseAccessConfig(text: string, source: string): AccessConfig {
  const document = parseDocument(text, source);
  assertDocument('providers-file', document, { code: 'ERR_ACCESS_CONFIG_INVALID', what: `providers file ${source}` });
  return normalizeAccessConfig(document);
}

type Nullable<T> = { [K in keyof T]?: T[K] | null };

/**
 * A fresh copy of a providers file that passed the `providers-file` schema, with Go's reading of `null` applied
 * (null means the zero value: no providers, an empty name, no exec config, an unset policy, an empty string).
 * Whether the chosen entry's exec config is usable is checked when it is chosen (`resolveClusterAccess`).
 * @internal
 */
export function normalizeAccessConfig(valid: unknown): AccessConfig {
  const providers = ((valid as { providers?: unknown[] | null }).providers ??
    []) as (Nullable<ProviderConfig> | null)[];
  return {
    providers: providers.map((entry) => {
      const provider: ProviderConfig = { name: entry?.name ?? '' };
      const exec = entry?.execConfig as Nullable<ExecConfig> | null | undefined;
      if (exec !== null && exec !== undefined) {
        provider.execConfig = normalizeExec(exec);
      }
      if (entry?.profileSourcedCLIArgsPolicy != null)
        provider.profileSourcedCLIArgsPolicy = entry.profileSourcedCLIArgsPolicy;
      if (entry?.profileSourcedEnvVarsPolicy != null)
        provider.profileSourcedEnvVarsPolicy = entry.profileSourcedEnvVarsPolicy;
      if (entry?.allowedProfileEnvVars != null) provider.allowedProfileEnvVars = [...entry.allowedProfileEnvVars];
      if (entry?.allowInsecureSkipTLSVerify != null)
        provider.allowInsecureSkipTLSVerify = entry.allowInsecureSkipTLSVerify;
      return provider;
    }),
  };
}

function normalizeExec(exec: Nullable<ExecConfig>): ExecConfig {
  const result = {} as ExecConfig;
  if (exec.apiVersion != null) result.apiVersion = exec.apiVersion;
  if (exec.command != null) result.command = exec.command;
  if (exec.args != null) result.args = exec.args.map((arg) => (arg as string | null) ?? '');
  if (exec.env != null) {
    result.env = exec.env.map((variable) => {
      const v = variable as Nullable<{ name: string; value: string }> | null;
      return { name: v?.name ?? '', value: v?.value ?? '' };
    });
  }
  if (exec.installHint != null) result.installHint = exec.installHint;
  if (exec.provideClusterInfo != null) result.provideClusterInfo = exec.provideClusterInfo;
  if (exec.interactiveMode != null) result.interactiveMode = exec.interactiveMode;
  return result;
}

function parseDocument(text: string, source: string): Record<string, unknown> {
  // JSON is the documented format, YAML a courtesy: a text that starts like JSON gets the JSON error.
  const document = readDocument(text, {
    source,
    code: 'ERR_ACCESS_CONFIG_PARSE' satisfies AccessConfigErrorCode,
    message: `failed to unmarshal access providers from ${source}`,
  });
  if (document === null || document === undefined || typeof document !== 'object' || Array.isArray(document)) {
    throw new CredentialsError(
      'ERR_ACCESS_CONFIG_PARSE',
      `failed to unmarshal access providers from ${source}: expected an object with "providers", got ${kindOf(document)}`,
      { path: source },
    );
  }
  return document as Record<string, unknown>;
}

function kindOf(value: unknown): string {
  if (value === null || value === undefined) return 'an empty document';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
