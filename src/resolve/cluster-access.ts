/**
 * ClusterProfile + providers file → what it takes to reach the cluster: the algorithm of cluster-inventory-api's
 * `BuildConfigFromCP`, as plain data, without its faults (it never mutates its inputs, never panics, env order is
 * deterministic, every error carries a stable code). test/e2e/differential.test.ts compares both on the same inputs.
 *
 * @see https://github.com/kubernetes/enhancements/tree/master/keps/sig-multicluster/5339-clusterprofile-plugin-credentials
 */
import { assertDocument, validateDocument, type SchemaId } from '../schemas/index.js';
import { normalizeAccessConfig } from './access-config.js';
import { clip, CredentialsError, quote, quoteUrl, type ErrorCodes } from '../base/errors.js';
import { effectiveEnvName, isAllowedProfileEnv, profileEnvDenial } from './profile-env.js';
import { canonicalBase64, isGoBase64 } from '../base/go-base64.js';
import type {
  AccessConfig,
  AccessProvider,
  Cluster,
  ClusterProfile,
  ExecCluster,
  ExecConfig,
  NamedExtension,
  ProviderConfig,
  ResolvedClusterAccess,
} from './types.js';

/** Codes raised by {@link resolveClusterAccess}. */
export type ResolveErrorCode = ErrorCodes<
  | 'ERR_PROFILE_INVALID'
  | 'ERR_ACCESS_CONFIG_INVALID'
  | 'ERR_NO_MATCHING_PROVIDER'
  | 'ERR_NO_EXEC_CONFIG'
  | 'ERR_EXEC_CONFIG_INVALID'
  | 'ERR_EXTENSION_INVALID'
  | 'ERR_POLICY_UNSUPPORTED'
  | 'ERR_PROFILE_ENV_DENIED'
  | 'ERR_PROFILE_INSECURE_TLS_DENIED'
>;

/** The cluster extension whose object the exec layer hands the plugin as `spec.cluster.config` (SIG Auth's key). */
export const EXEC_EXTENSION_NAME = 'client.authentication.k8s.io/exec';
/** KEP-5339 reserved extension: a string list appended to the plugin's args under policy `Append`. */
export const ADDITIONAL_ARGS_EXTENSION_NAME = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-args';
/** KEP-5339 reserved extension: a string map merged into the plugin's env under `AppendIfNotExists` / `Replace`. */
export const ADDITIONAL_ENVS_EXTENSION_NAME = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs';

/** Options of {@link resolveClusterAccess}. */
export interface ResolveOptions {
  /**
   * Receives the deprecation warning for each `status.credentialProviders` entry (upstream logs it with klog).
   * Default: no output.
   */
  warn?: (message: string) => void;
}

const PROFILE_SCHEMAS: Readonly<Record<string, SchemaId>> = {
  'multicluster.x-k8s.io/v1alpha1': 'clusterprofile.v1alpha1',
  'multicluster.x-k8s.io/v1alpha2': 'clusterprofile.v1alpha2',
};

type EnvVar = { name: string; value: string };

/**
 * Chooses the access provider for a ClusterProfile and computes the final exec config and cluster connection.
 *
 * - Providers of the profile: `status.credentialProviders` (deprecated; each reported through `options.warn`), then
 *   `status.accessProviders`, which wins on a name clash.
 * - The first providers-file entry (file order) whose name the profile lists is chosen; the profile's order does not
 *   matter. None: `ERR_NO_MATCHING_PROVIDER`. Chosen entry without `execConfig`: `ERR_NO_EXEC_CONFIG`.
 * - Reserved extensions on the chosen cluster, in their order: `…/additional-args` (policy `Append` appends them;
 *   `Ignore` or unset ignores them; null items are dropped) and `…/additional-envs` (`AppendIfNotExists`: the file's
 *   env wins on a clash; `Replace`: the extension wins; `Ignore` or unset: ignored; a null value is ""). The resulting
 *   env lists the file's variables in file order, then the extension's new keys sorted. An unknown policy is
 *   `ERR_POLICY_UNSUPPORTED`, but only when the matching extension is present; a payload upstream's YAML decoder
 *   refuses is `ERR_EXTENSION_INVALID` (path = the extension or the item).
 * - An extension name listed twice on the chosen cluster is `ERR_PROFILE_INVALID` (client-go's conversion to its
 *   internal Cluster refuses it), unless every earlier one has a null payload.
 * - The `client.authentication.k8s.io/exec` extension becomes `cluster.config` (deep-copied); `interactiveMode` is
 *   always `Never`; server, CA data (re-encoded as Go writes it), tls-server-name, insecure-skip-tls-verify,
 *   proxy-url and disable-compression are carried; `certificate-authority` (a file path on the producer's side) is
 *   ignored.
 *
 * The profile is validated against its JSON Schema, every `certificate-authority-data` must be base64 Go decodes, and
 * the chosen `proxy-url` must parse (`ERR_PROFILE_INVALID`, path = the JSON path). Inputs are never mutated and the
 * result shares no object with them: two calls give deep-equal, independent results.
 *
 * @example
 * ```ts
 * const accessConfig = await loadAccessConfig('clusterprofile-provider-file.json');
 * const { providerName, cluster, exec } = resolveClusterAccess(profile, accessConfig, {
 *   warn: (message) => logger.warn(message),
 * });
 * // cluster.server, cluster['certificate-authority-data'], exec.command, exec.args, exec.env, cluster.config
 * ```
 */
export function resolveClusterAccess(
  profile: ClusterProfile,
  accessConfig: AccessConfig,
  options: ResolveOptions = {},
): ResolvedClusterAccess {
  validateProfile(profile);
  const fileProviders = validateAccessConfig(accessConfig);
  const name = profile.metadata.name;

  // 1. The profile's providers by name; accessProviders overwrite credentialProviders.
  // JSON paths are only spelled out when an error needs one (this runs once per profile on a controller's hot path).
  const byName = new Map<
    string,
    { provider: AccessProvider; field: 'accessProviders' | 'credentialProviders'; index: number }
  >();
  const status = profile.status ?? {};
  const deprecated = status.credentialProviders ?? [];
  for (let index = 0; index < deprecated.length; index++) {
    const provider = deprecated[index] as AccessProvider;
    byName.set(provider.name, { provider, field: 'credentialProviders', index });
    options.warn?.(
      `ClusterProfile ${quote(name)} uses deprecated field CredentialProviders ${quote(provider.name)}; please migrate to AccessProviders`,
    );
  }
  const current = status.accessProviders ?? [];
  for (let index = 0; index < current.length; index++) {
    const provider = current[index] as AccessProvider;
    byName.set(provider.name, { provider, field: 'accessProviders', index });
  }

  // 2. The first providers-file entry the profile lists.
  const fileIndex = fileProviders.findIndex((entry) => byName.has(entry.name));
  const chosenEntry = fileProviders[fileIndex];
  const chosen = chosenEntry === undefined ? undefined : byName.get(chosenEntry.name);
  if (chosenEntry === undefined || chosen === undefined) {
    throw new CredentialsError(
      'ERR_NO_MATCHING_PROVIDER',
      `no matching cluster accessor found for cluster profile ${quote(name)}`,
      {
        path: '$.status.accessProviders',
        hint: `the profile lists ${listNames([...byName.keys()])}; the providers file configures ${listNames(
          fileProviders.map((entry) => entry.name),
        )}`,
      },
    );
  }

  // 3. Its exec config.
  const execConfig = chosenEntry.execConfig;
  if (execConfig === undefined || execConfig === null) {
    throw new CredentialsError('ERR_NO_EXEC_CONFIG', `no exec config found for provider ${quote(chosenEntry.name)}`, {
      path: `$.providers[${fileIndex}].execConfig`,
    });
  }
  validateExecConfig(execConfig, chosenEntry.name, fileIndex);

  // 4. Reserved extensions, in the cluster's order; then the check of repeated names, which upstream makes after them.
  const cluster = chosen.provider.cluster;
  if (cluster === undefined || cluster === null) {
    throw new CredentialsError(
      'ERR_PROFILE_INVALID',
      `access provider ${quote(chosenEntry.name)} of ClusterProfile ${quote(name)} has no cluster to connect to`,
      { path: `$.status.${chosen.field}[${chosen.index}].cluster` },
    );
  }
  let args = [...(execConfig.args ?? [])];
  let env: EnvVar[] = (execConfig.env ?? []).map((variable) => ({ name: variable.name, value: variable.value }));
  let execExtension: { value: unknown } | undefined;
  const extensions = cluster.extensions ?? [];
  for (let index = 0; index < extensions.length; index++) {
    const extension = extensions[index] as NamedExtension;
    const path = () => `$.status.${chosen.field}[${chosen.index}].cluster.extensions[${index}].extension`;
    switch (extension.name) {
      case EXEC_EXTENSION_NAME:
        execExtension = { value: extension.extension };
        break;
      case ADDITIONAL_ARGS_EXTENSION_NAME:
        args = applyArgs(args, extension.extension, chosenEntry, fileIndex, path);
        break;
      case ADDITIONAL_ENVS_EXTENSION_NAME:
        env = applyEnvs(env, extension.extension, chosenEntry, fileIndex, path);
        break;
      default:
        break;
    }
  }
  const clusterPath = `$.status.${chosen.field}[${chosen.index}].cluster`;
  if (typeof cluster.server !== 'string' || cluster.server === '') {
    // client-go would send such a config's requests to localhost; producers write "" when they do not know the server.
    throw new CredentialsError(
      'ERR_PROFILE_INVALID',
      `access provider ${quote(chosenEntry.name)} of ClusterProfile ${quote(name)} has no server`,
      {
        path: `${clusterPath}.server`,
        hint: "the cluster manager has not reported the cluster's API server yet: report it to the producer",
      },
    );
  }
  assertUniqueExtensionNames(extensions, clusterPath);
  assertProxyUrl(cluster['proxy-url'], clusterPath);
  if (cluster['insecure-skip-tls-verify'] === true && chosenEntry.allowInsecureSkipTLSVerify !== true) {
    throw new CredentialsError<ResolveErrorCode>(
      'ERR_PROFILE_INSECURE_TLS_DENIED',
      `the ClusterProfile turns TLS verification off (insecure-skip-tls-verify: true) for provider ${quote(chosenEntry.name)}, which the providers file does not allow`,
      {
        path: `${clusterPath}['insecure-skip-tls-verify']`,
        hint: `publish the cluster's CA in certificate-authority-data instead, or let the operator allow it: "allowInsecureSkipTLSVerify": true on providers-file entry $.providers[${fileIndex}]`,
      },
    );
  }

  // 5. The result: fresh objects only.
  const execCluster: ExecCluster = { server: cluster.server };
  copyIfSet(execCluster, cluster, 'tls-server-name');
  copyIfSet(execCluster, cluster, 'insecure-skip-tls-verify');
  const caData = cluster['certificate-authority-data'];
  if (caData !== undefined && caData !== null && caData !== '') {
    execCluster['certificate-authority-data'] = canonicalBase64(caData);
  }
  copyIfSet(execCluster, cluster, 'proxy-url');
  copyIfSet(execCluster, cluster, 'disable-compression');
  if (execExtension !== undefined) {
    execCluster.config = copyJson(execExtension.value);
  }

  const exec: ResolvedClusterAccess['exec'] = {
    apiVersion: execConfig.apiVersion,
    command: execConfig.command,
    args,
    env,
    provideClusterInfo: execConfig.provideClusterInfo === true,
    interactiveMode: 'Never',
  };
  if (execConfig.installHint !== undefined && execConfig.installHint !== '') {
    exec.installHint = execConfig.installHint;
  }

  const resolvedProfile: ResolvedClusterAccess['profile'] = { name };
  if (profile.metadata.namespace !== undefined) {
    resolvedProfile.namespace = profile.metadata.namespace;
  }
  return { providerName: chosenEntry.name, profile: resolvedProfile, cluster: execCluster, exec };
}

/** An extension's payload: checked by the reserved-extension readers below, not by the schema (see validateProfile). */
const EXTENSION_PAYLOAD =
  /^\$\.status\.(?:accessProviders|credentialProviders)\[\d+\]\.cluster\.extensions\[\d+\]\.extension$/;

function validateProfile(profile: unknown): void {
  const apiVersion = (profile as { apiVersion?: unknown } | null)?.apiVersion;
  const schema = typeof apiVersion === 'string' ? PROFILE_SCHEMAS[apiVersion] : undefined;
  if (schema === undefined) {
    throw new CredentialsError(
      'ERR_PROFILE_INVALID',
      `invalid ClusterProfile: apiVersion must be one of ${Object.keys(PROFILE_SCHEMAS).join(', ')}, got ${apiVersion === undefined ? 'nothing' : quote(apiVersion)}`,
      { path: '$.apiVersion' },
    );
  }
  // The CRD types an extension as an object, but upstream's library reads the additional-args extension as a list
  // (its own tests store one): accept any payload here and let the reader of each reserved extension judge it.
  const issues = validateDocument(schema, profile).filter((issue) => !EXTENSION_PAYLOAD.test(issue.path));
  const first = issues[0];
  if (first !== undefined) {
    throw new CredentialsError(
      'ERR_PROFILE_INVALID',
      `ClusterProfile is invalid: ${issues
        .slice(0, 5)
        .map((issue) => `${clip(issue.path)}: ${clip(issue.message)}`)
        .join('; ')}`,
      { path: clip(first.path) },
    );
  }
  // Go decodes the whole profile: bad base64 in any provider's CA data fails it, chosen or not.
  const status = (profile as ClusterProfile).status ?? {};
  for (const field of ['credentialProviders', 'accessProviders'] as const) {
    const providers = status[field] ?? [];
    for (let index = 0; index < providers.length; index++) {
      const caData = providers[index]?.cluster?.['certificate-authority-data'];
      if (typeof caData === 'string' && !isGoBase64(caData)) {
        throw new CredentialsError<ResolveErrorCode>(
          'ERR_PROFILE_INVALID',
          'ClusterProfile is invalid: certificate-authority-data is not padded standard base64 (line breaks allowed)',
          { path: `$.status.${field}[${index}].cluster['certificate-authority-data']` },
        );
      }
    }
  }
}

/**
 * client-go converts the chosen cluster's extension list into a map and refuses a name it has already stored a
 * payload for (a null payload is not stored, so a name may follow its null twin).
 */
function assertUniqueExtensionNames(extensions: readonly NamedExtension[], clusterPath: string): void {
  const stored = new Set<string>();
  for (let index = 0; index < extensions.length; index++) {
    const { name, extension } = extensions[index] as NamedExtension;
    if (stored.has(name)) {
      throw new CredentialsError<ResolveErrorCode>(
        'ERR_PROFILE_INVALID',
        `ClusterProfile is invalid: duplicate extension name ${quote(name)} in the cluster's extensions`,
        { path: `${clusterPath}.extensions[${index}].name`, hint: 'list each extension name once' },
      );
    }
    if (extension !== null && extension !== undefined) stored.add(name);
  }
}

/** A proxy URL the client cannot parse fails every request (upstream: when the client is built); refuse it now. */
function assertProxyUrl(proxyUrl: string | undefined, clusterPath: string): void {
  if (proxyUrl === undefined || proxyUrl === '' || URL.canParse(proxyUrl)) return;
  throw new CredentialsError<ResolveErrorCode>(
    'ERR_PROFILE_INVALID',
    `ClusterProfile is invalid: proxy-url ${quoteUrl(proxyUrl)} is not a URL`,
    { path: `${clusterPath}['proxy-url']` },
  );
}

function validateAccessConfig(accessConfig: unknown): readonly ProviderConfig[] {
  // Callers may build an AccessConfig in code (upstream's `access.New`): check it like a file.
  assertDocument('providers-file', accessConfig, { code: 'ERR_ACCESS_CONFIG_INVALID', what: 'providers file' });
  return normalizeAccessConfig(accessConfig).providers;
}

/** The chosen entry must be runnable: what client-go rejects when it builds the authenticator. */
function validateExecConfig(execConfig: ExecConfig, providerName: string, fileIndex: number): void {
  const base = `$.providers[${fileIndex}].execConfig`;
  const issues = validateDocument('exec-config', execConfig).map((issue) => ({
    path: base + issue.path.slice(1),
    message: issue.message,
  }));
  const first = issues[0];
  if (first !== undefined) {
    throw new CredentialsError(
      'ERR_EXEC_CONFIG_INVALID',
      `exec config of provider ${quote(providerName)} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      { path: first.path },
    );
  }
}

function applyArgs(
  args: string[],
  payload: unknown,
  entry: ProviderConfig,
  fileIndex: number,
  path: () => string,
): string[] {
  const policy = entry.profileSourcedCLIArgsPolicy ?? '';
  switch (policy) {
    case '':
    case 'Ignore':
      return args;
    case 'Append':
      return [...args, ...stringList(payload, path)];
    default:
      throw new CredentialsError(
        'ERR_POLICY_UNSUPPORTED',
        `unsupported ProfileSourcedCLIArgsPolicy: ${quote(policy)}`,
        { path: `$.providers[${fileIndex}].profileSourcedCLIArgsPolicy`, hint: 'use "Append" or "Ignore"' },
      );
  }
}

function applyEnvs(
  env: EnvVar[],
  payload: unknown,
  entry: ProviderConfig,
  fileIndex: number,
  path: () => string,
): EnvVar[] {
  const policy = entry.profileSourcedEnvVarsPolicy ?? '';
  if (policy === '' || policy === 'Ignore') {
    return env;
  }
  if (policy !== 'AppendIfNotExists' && policy !== 'Replace') {
    throw new CredentialsError('ERR_POLICY_UNSUPPORTED', `unsupported ProfileSourcedEnvVarsPolicy: ${quote(policy)}`, {
      path: `$.providers[${fileIndex}].profileSourcedEnvVarsPolicy`,
      hint: 'use "AppendIfNotExists", "Replace" or "Ignore"',
    });
  }
  const fromProfile = stringMap(payload, path);
  for (const variable of fromProfile) {
    const reason = profileEnvDenial(variable.name);
    if (reason !== undefined && !isAllowedProfileEnv(variable.name, entry.allowedProfileEnvVars)) {
      throw new CredentialsError<ResolveErrorCode>(
        'ERR_PROFILE_ENV_DENIED',
        `the ClusterProfile may not set the plugin's environment variable ${quote(variable.name)}: it ${reason === 'loads code' ? 'can load code into the plugin' : reason === 'chooses the program' ? 'chooses which program runs' : reason === 'changes trust' ? 'changes what the plugin trusts' : "changes where the plugin's credentials come from or go"}`,
        {
          path: memberPath(path(), variable.name),
          hint: `remove it from the profile's ${ADDITIONAL_ENVS_EXTENSION_NAME} extension, or let the operator allow it: "allowedProfileEnvVars": [${quote(effectiveEnvName(variable.name))}] on providers-file entry $.providers[${fileIndex}]`,
        },
      );
    }
  }
  // The existing variables keep their order; a name listed twice collapses to its first position with the value
  // upstream's map would keep (AppendIfNotExists: the last one; Replace: the first one). Lists are short: a linear
  // search beats building maps on this per-profile path.
  const merged: EnvVar[] = [];
  for (const variable of env) {
    const existing = merged.find((candidate) => candidate.name === variable.name);
    if (existing === undefined) {
      merged.push({ name: variable.name, value: variable.value });
    } else if (policy === 'AppendIfNotExists') {
      existing.value = variable.value;
    }
  }
  const added: EnvVar[] = [];
  for (const variable of fromProfile) {
    const existing = merged.find((candidate) => candidate.name === variable.name);
    if (existing === undefined) {
      added.push(variable);
    } else if (policy === 'Replace') {
      existing.value = variable.value;
    }
  }
  added.sort((a, b) => compareCodeUnits(a.name, b.name));
  return added.length === 0 ? merged : merged.concat(added);
}

/**
 * Upstream decodes the payload's JSON text with a YAML decoder (gopkg.in/yaml.v3) into `[]string`: scalars become
 * their text and null items are dropped.
 */
function stringList(payload: unknown, path: () => string): string[] {
  const prefix = 'failed to unmarshal additional CLI args extension';
  if (payload === null || payload === undefined) return [];
  if (!Array.isArray(payload)) {
    throw badExtension(prefix, `expected a list of strings, got ${kind(payload)}`, path());
  }
  const result: string[] = [];
  for (let index = 0; index < payload.length; index++) {
    const item: unknown = payload[index];
    if (item === null) continue;
    const text = scalarText(item);
    if (text === undefined) {
      throw badExtension(prefix, `expected a string, got ${kind(item)}`, `${path()}[${index}]`);
    }
    assertYamlReadable(text, prefix, () => `${path()}[${index}]`);
    result.push(text);
  }
  return result;
}

/**
 * The additional-envs payload (a string map, decoded like the args into `map[string]string`: a null value is "") as
 * fresh name/value pairs, in the payload's key order.
 */
function stringMap(payload: unknown, path: () => string): EnvVar[] {
  const prefix = 'failed to unmarshal additional env vars extension';
  const result: EnvVar[] = [];
  if (payload === null || payload === undefined) return result;
  if (typeof payload !== 'object' || Array.isArray(payload)) {
    throw badExtension(prefix, `expected a map of strings, got ${kind(payload)}`, path());
  }
  for (const name of Object.keys(payload)) {
    const value = (payload as Record<string, unknown>)[name];
    const text = scalarText(value);
    if (text === undefined) {
      throw badExtension(prefix, `expected a string, got ${kind(value)}`, memberPath(path(), name));
    }
    assertYamlReadable(name, prefix, () => memberPath(path(), name));
    assertYamlReadable(text, prefix, () => memberPath(path(), name));
    // Escapes take at most 6 characters: only long names need counting.
    const keyLength = name.length * 6 + 2 > YAML_MAX_KEY_LENGTH ? jsonTextLength(name) : 0;
    if (keyLength > YAML_MAX_KEY_LENGTH) {
      throw badExtension(
        prefix,
        `variable name is ${keyLength} characters as JSON text; upstream's YAML decoder refuses a key over ${YAML_MAX_KEY_LENGTH}`,
        memberPath(path(), name),
      );
    }
    result.push({ name, value: text });
  }
  return result;
}

/** YAML's limit on an implicit key, which a JSON object key in a flow mapping is (quotes and escapes count). */
const YAML_MAX_KEY_LENGTH = 1024;
/** What YAML refuses in a stream (C0 are escaped in JSON text): DEL, C1 controls but NEL, U+FFFE/U+FFFF. */
const YAML_FORBIDDEN = /[\u007f-\u0084\u0086-\u009f\ufffe\uffff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Refuses the characters upstream's YAML decoder refuses in the payload's JSON text, and NEL (U+0085), which it reads
 * as a line break and folds into a space: refused here rather than passed on changed.
 */
function assertYamlReadable(text: string, prefix: string, path: () => string): void {
  const bad = YAML_FORBIDDEN.exec(text) ?? LONE_SURROGATE.exec(text);
  if (bad !== null) {
    const code = `U+${(bad[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
    throw badExtension(prefix, `character ${code} is not allowed (upstream's YAML decoder refuses it)`, path());
  }
  if (text.includes('\u0085')) {
    throw badExtension(
      prefix,
      "character U+0085 (NEL) is not allowed (upstream's YAML decoder turns it into a space)",
      path(),
    );
  }
}

/** Length in code points of `text` as Go's encoding/json writes a string (what the API server serves). */
function jsonTextLength(text: string): number {
  let length = 2;
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (
      char === '"' ||
      char === '\\' ||
      char === '\n' ||
      char === '\r' ||
      char === '\t' ||
      char === '\b' ||
      char === '\f'
    )
      length += 2;
    else if (code < 0x20 || char === '<' || char === '>' || char === '&' || code === 0x2028 || code === 0x2029)
      length += 6;
    else length += 1;
  }
  return length;
}

function memberPath(path: string, name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) && name.length <= 200 ? `${path}.${name}` : `${path}[${quote(name)}]`;
}

function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null) return '';
  return undefined;
}

function badExtension(prefix: string, reason: string, path: string): CredentialsError {
  return new CredentialsError('ERR_EXTENSION_INVALID', `${prefix}: ${reason}`, { path });
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function copyIfSet<K extends keyof ExecCluster & keyof Cluster>(target: ExecCluster, source: Cluster, key: K): void {
  const value = source[key];
  if (value !== undefined && value !== null && value !== '') {
    (target as unknown as Record<string, unknown>)[key] = value;
  }
}

/** A deep copy of JSON data (what a parsed ClusterProfile holds); several times faster than structuredClone. */
function copyJson(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(copyJson);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = copyJson((value as Record<string, unknown>)[key]);
  return copy;
}

/** At most 10 names, each quoted (bounded): a profile may list any number of providers of any length. */
function listNames(names: readonly string[]): string {
  if (names.length === 0) return 'no providers';
  const shown = names
    .slice(0, 10)
    .map((n) => quote(n, 100))
    .join(', ');
  return names.length > 10 ? `${shown} and ${names.length - 10} more` : shown;
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
