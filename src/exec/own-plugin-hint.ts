/**
 * What `ERR_EXEC_NOT_FOUND` says when the missing command is one of this package's own plugins
 * (`clusterprofile-tenant-cert`, `clusterprofile-token-request`, `clusterprofile-oidc`) and the providers file gave no
 * `installHint`: where the package installed them and the two fixes (PATH, or the absolute path as `command`).
 *
 * The command is not resolved here on the user's behalf: a providers file must run the same program under kubectl,
 * client-go and this library (docs/explanation/design-decisions.md, "Own plugins are not looked up").
 */
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The plugin binaries this package installs (package.json `bin`, without the `clusterprofile` CLI). */
export const OWN_PLUGIN_BINARIES = [
  'clusterprofile-tenant-cert',
  'clusterprofile-token-request',
  'clusterprofile-oidc',
] as const;
export type OwnPluginBinary = (typeof OWN_PLUGIN_BINARIES)[number];

/**
 * The package root: this module is `dist/exec/own-plugin-hint.js`, or bundled into `dist/bin/<binary>.mjs`; both are
 * two levels below it.
 */
function packageRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..');
}

/**
 * The hint for a command that was not found, when it names one of our plugins by its bare name (a path the
 * operator wrote is theirs to fix); undefined otherwise.
 */
export function ownPluginHint(command: string, root: string = packageRoot()): string | undefined {
  if (command.includes('/') || !(OWN_PLUGIN_BINARIES as readonly string[]).includes(command)) return undefined;
  const script = join(root, 'bin', `${command}.mjs`);
  // Installed as a dependency: npm links the bins into the node_modules/.bin next to the package.
  const binDir = basename(dirname(root)) === 'node_modules' ? join(dirname(root), '.bin') : undefined;
  const linked = binDir !== undefined && existsSync(join(binDir, command)) ? join(binDir, command) : undefined;
  if (linked === undefined) {
    // A clone of the repository, or a global install (npm links those bins into its prefix's bin/, which we do not
    // guess): the script is what certainly exists.
    return `${command} comes with the clusterprofile-credentials package (${script}), but no ${command} is on PATH; set "command" in the providers file to that absolute path, or add the directory npm linked the package's binaries into to PATH (node_modules/.bin of the project that installed it; for npm install -g, the bin of npm's prefix)`;
  }
  return `${command} comes with the clusterprofile-credentials package, installed as ${linked}, which is not on PATH; either add ${binDir} to the PATH of the process that runs it, or set "command" in the providers file to the absolute path ${linked}`;
}

/**
 * The message and hint of `ERR_EXEC_NOT_FOUND` for `command`: client-go's text with the providers file's
 * `installHint` after it, else, for one of our plugins, {@link ownPluginHint} as the hint.
 */
export function notFoundProblem(command: string, installHint: string | undefined): { message: string; hint?: string } {
  const message = `exec: executable ${command} not found`;
  if (installHint !== undefined && installHint !== '')
    return { message: `${message}\n\n${installHint}`, hint: installHint };
  const hint = ownPluginHint(command);
  return hint === undefined ? { message } : { message, hint };
}
