/**
 * Environment variables a ClusterProfile's author must not set through the additional-envs extension: each one can
 * take over the plugin process (load code into it, choose which program runs), change what it trusts, or change
 * where its credentials come from and go. The providers file's own `env` is the operator's and is never checked;
 * an operator lets a profile set one of these anyway with the entry's `allowedProfileEnvVars`.
 *
 * A denylist cannot know the variables of every third-party plugin: an operator who does not trust the profiles'
 * authors keeps `profileSourcedEnvVarsPolicy` at `Ignore`.
 */

/** Why a variable is refused; the groups of docs/explanation/security.md. */
export type EnvDenialReason = 'loads code' | 'chooses the program' | 'changes trust' | 'moves credentials';

/** Denied names (upper case; names are compared in upper case: Windows ignores case, and so do some readers). */
const EXACT: Readonly<Record<string, EnvDenialReason>> = {
  // Code loaded by interpreters and the dynamic loader (NODE_*, LD_*, DYLD_*, OPENSSL_*, PYTHON* below).
  RUBYOPT: 'loads code',
  RUBYLIB: 'loads code',
  PERLLIB: 'loads code',
  JAVA_TOOL_OPTIONS: 'loads code',
  _JAVA_OPTIONS: 'loads code',
  JDK_JAVA_OPTIONS: 'loads code',
  CLASSPATH: 'loads code',
  // Shell start-up: a plugin that is (or runs) a shell script sources these, or imports functions, or runs PS4.
  BASH_ENV: 'loads code',
  ENV: 'loads code',
  SHELLOPTS: 'loads code',
  BASHOPTS: 'loads code',
  PS4: 'loads code',
  // glibc's list of variables it ignores in setuid programs (unsecvars.h) beyond LD_*: the same dangers.
  GCONV_PATH: 'loads code',
  GETCONF_DIR: 'loads code',
  GLIBC_TUNABLES: 'loads code',
  HOSTALIASES: 'moves credentials',
  LOCALDOMAIN: 'moves credentials',
  LOCPATH: 'loads code',
  MALLOC_TRACE: 'loads code',
  NIS_PATH: 'loads code',
  NLSPATH: 'loads code',
  RESOLV_HOST_CONF: 'moves credentials',
  RES_OPTIONS: 'moves credentials',
  TMPDIR: 'moves credentials',
  TZDIR: 'loads code',
  // Which binary a bare command name is (our exec layer and Go's look it up in PATH), and what a plugin runs.
  PATH: 'chooses the program',
  // Trust stores and switches that turn checks off.
  SSL_CERT_FILE: 'changes trust',
  SSL_CERT_DIR: 'changes trust',
  CURL_CA_BUNDLE: 'changes trust',
  REQUESTS_CA_BUNDLE: 'changes trust',
  GODEBUG: 'changes trust',
  // Where credentials are read, written or sent: our plugins and client-go read these (KUBE* below).
  HOME: 'moves credentials',
  USERPROFILE: 'moves credentials',
  HTTPS_PROXY: 'moves credentials',
  HTTP_PROXY: 'moves credentials',
  ALL_PROXY: 'moves credentials',
  NO_PROXY: 'moves credentials',
  SSLKEYLOGFILE: 'moves credentials',
};

/** Denied prefixes (upper case). */
const PREFIXES: readonly (readonly [string, EnvDenialReason])[] = [
  // NODE_OPTIONS (--import, --require), NODE_PATH, NODE_EXTRA_CA_CERTS (a trusted CA), NODE_TLS_REJECT_UNAUTHORIZED,
  // NODE_USE_ENV_PROXY, NODE_DEBUG (prints request details) ...: every NODE_ variable configures the runtime of our
  // plugins, none is needed per cluster.
  ['NODE_', 'loads code'],
  ['LD_', 'loads code'],
  ['DYLD_', 'loads code'],
  // OPENSSL_CONF loads engines and providers (shared libraries); OPENSSL_MODULES / OPENSSL_ENGINES say from where.
  ['OPENSSL_', 'loads code'],
  ['PYTHON', 'loads code'],
  ['PERL5', 'loads code'],
  ['BASH_FUNC_', 'loads code'],
  // KUBECONFIG (token-request's bootstrap identity, the hub), KUBECACHEDIR (where plugins write credentials),
  // KUBERNETES_EXEC_INFO (the plugin's input), KUBERNETES_SERVICE_HOST/PORT (where the pod's token is sent), KUBERC.
  ['KUBE', 'moves credentials'],
  // Our own knobs: CLUSTERPROFILE_EXEC_DEPTH (the recursion guard), CLUSTERPROFILE_DEBUG.
  ['CLUSTERPROFILE_', 'moves credentials'],
];

/**
 * The name a process will see for an env entry built from `name`: `NAME=value` is split at the first `=` (after
 * the first character, where Windows keeps `=C:` names), so a key `NODE_OPTIONS=--import=x` sets NODE_OPTIONS.
 */
export function effectiveEnvName(name: string): string {
  const equals = name.indexOf('=', 1);
  return equals < 0 ? name : name.slice(0, equals);
}

/** Why a profile may not set `name` (its effective name, any case), or undefined when it may. */
export function profileEnvDenial(name: string): EnvDenialReason | undefined {
  const upper = effectiveEnvName(name).toUpperCase();
  const exact = EXACT[upper];
  if (exact !== undefined && Object.hasOwn(EXACT, upper)) return exact;
  for (const [prefix, reason] of PREFIXES) {
    if (upper.startsWith(prefix)) return reason;
  }
  return undefined;
}

/** Whether the providers-file entry's `allowedProfileEnvVars` lets the profile set `name` (exact names, any case). */
export function isAllowedProfileEnv(name: string, allowed: readonly string[] | undefined): boolean {
  if (allowed === undefined || allowed.length === 0) return false;
  const upper = effectiveEnvName(name).toUpperCase();
  return allowed.some((entry) => entry.toUpperCase() === upper);
}
