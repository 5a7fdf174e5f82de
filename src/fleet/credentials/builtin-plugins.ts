/**
 * Recognising this package's own plugin binaries in a providers file's exec config (`clusterprofile-tenant-cert`,
 * `clusterprofile-token-request`, `clusterprofile-oidc`, by name or as `node <script>`), so that the fleet obtains
 * their credentials in-process instead of running them, and loading their providers.
 */
import type { OwnPluginBinary } from '../../exec/own-plugin-hint.js';
import type { ExecConfig } from '../../resolve/types.js';
import type { AnyCredentialProvider } from '../fleet-types.js';

/**
 * This package's plugins by binary name (every one of exec's list: the type says so); loaded on first use (a
 * provider's door pulls in its whole folder).
 */
const BUILTIN_PROVIDERS: Readonly<Record<OwnPluginBinary, () => Promise<AnyCredentialProvider>>> = {
  'clusterprofile-tenant-cert': async () => (await import('../../providers/tenant-cert/index.js')).tenantCertProvider,
  'clusterprofile-token-request': async () =>
    (await import('../../providers/token-request/index.js')).tokenRequestProvider,
  'clusterprofile-oidc': async () => (await import('../../providers/oidc/index.js')).oidcProvider,
};

function baseName(file: string): string {
  return (file.split(/[\\/]/).pop() ?? file).replace(/\.(mjs|cjs|js|exe|cmd)$/i, '');
}

/**
 * The binary an exec config runs when it is one of ours, and its flags: `command: clusterprofile-token-request` (any
 * directory), or `command: node` (or this process's node) with the binary's script as the first argument.
 */
export function builtinPluginOf(
  exec: Pick<ExecConfig, 'command' | 'args'>,
): { binary: string; argv: readonly string[] } | undefined {
  const command = baseName(exec.command);
  const args = exec.args ?? [];
  if (Object.hasOwn(BUILTIN_PROVIDERS, command)) return { binary: command, argv: args };
  const isNode = command === 'node' || exec.command === process.execPath;
  const script = args[0] === undefined ? undefined : baseName(args[0]);
  if (isNode && script !== undefined && Object.hasOwn(BUILTIN_PROVIDERS, script))
    return { binary: script, argv: args.slice(1) };
  return undefined;
}

/** The provider of one of our binaries, as {@link builtinPluginOf} names it (its folder is imported now). */
export function loadBuiltinProvider(binary: string): Promise<AnyCredentialProvider> {
  return BUILTIN_PROVIDERS[binary as OwnPluginBinary]();
}
