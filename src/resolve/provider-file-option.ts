/**
 * The `--clusterprofile-provider-file` flag, spelled and defaulted as cluster-inventory-api's
 * `access.SetupProviderFileFlag` (`-clusterprofile-provider-file`, default `clusterprofile-provider-file.json`), so a
 * controller's manifests work unchanged whether it is written in Go or TypeScript.
 */
import type { Argv } from 'yargs';

/** The flag's name (without dashes). */
export const PROVIDER_FILE_OPTION = 'clusterprofile-provider-file';
/** The flag's default: a file in the working directory, as upstream. */
export const DEFAULT_PROVIDER_FILE = 'clusterprofile-provider-file.json';

/** What the flag adds to the parsed arguments. */
export interface ProviderFileArgs {
  'clusterprofile-provider-file': string;
}

/**
 * Registers `--clusterprofile-provider-file <path>` on a yargs instance (a string, default
 * `clusterprofile-provider-file.json`). Read the file with `loadAccessConfig`.
 *
 * @example
 * ```ts
 * import yargs from 'yargs';
 * import { hideBin } from 'yargs/helpers';
 * import { loadAccessConfig, withProviderFileOption } from 'clusterprofile-credentials';
 *
 * const argv = await withProviderFileOption(yargs(hideBin(process.argv))).strict().parseAsync();
 * const accessConfig = await loadAccessConfig(argv['clusterprofile-provider-file']);
 * ```
 */
export function withProviderFileOption<T>(parser: Argv<T>): Argv<T & ProviderFileArgs> {
  return parser.option(PROVIDER_FILE_OPTION, {
    type: 'string',
    default: DEFAULT_PROVIDER_FILE,
    describe: 'Path to the providers file (JSON or YAML) mapping access-provider names to exec plugins',
    requiresArg: true,
  }) as Argv<T & ProviderFileArgs>;
}
