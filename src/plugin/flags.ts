/**
 * The command line of every plugin: the provider's flags plus the runtime's own, with `node:util` `parseArgs`'s
 * rules (yargs costs tens of milliseconds to import; a plugin runs on every kubectl call). What kubectl passes — long
 * flags with their values — is read by {@link readCommonForm}; anything else (short flags, `--`, mistakes) goes to
 * `parseArgs` itself, whose first use is a noticeable part of a cache hit.
 */
import type { ParseArgsOptionsConfig } from 'node:util';
import { CredentialsError, type ErrorCodes } from '../base/errors.js';
import type { CredentialProvider, FlagSpecs, FlagValues } from './provider.js';

type ParsedArgs = {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
};

/**
 * `parseArgs({ args, options, strict: true, allowPositionals: true })` for the arguments made only of positionals
 * not starting with `-`, `--name value` / `--name=value` of a string option (the value not starting with `-`) and
 * `--name` of a boolean one; undefined for anything else, which `parseArgs` then reads (or rejects).
 */
export function readCommonForm(args: readonly string[], options: ParseArgsOptionsConfig): ParsedArgs | undefined {
  const values: ParsedArgs['values'] = Object.create(null) as ParsedArgs['values'];
  const positionals: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]!;
    if (!arg.startsWith('-')) {
      positionals.push(arg);
      continue;
    }
    if (!arg.startsWith('--') || arg.length === 2) return undefined;
    const equals = arg.indexOf('=');
    const name = equals === -1 ? arg.slice(2) : arg.slice(2, equals);
    const option = Object.hasOwn(options, name) ? options[name] : undefined;
    if (option === undefined) return undefined;
    if (option.type === 'boolean') {
      if (equals !== -1 || option.multiple === true) return undefined;
      values[name] = true;
      continue;
    }
    let value: string;
    if (equals !== -1) {
      value = arg.slice(equals + 1);
    } else {
      const next = args[index + 1];
      if (next === undefined || next.startsWith('-')) return undefined;
      value = next;
      index += 1;
    }
    if (option.multiple === true) {
      const list = values[name];
      values[name] = Array.isArray(list) ? [...list, value] : [value];
    } else {
      values[name] = value;
    }
  }
  return { values, positionals };
}

/** Codes of command-line mistakes (exit 2). */
export type PluginUsageErrorCode = ErrorCodes<'ERR_PLUGIN_USAGE'>;

/** The flags every plugin has, whatever its provider. */
export const COMMON_FLAGS = {
  'cache-dir': {
    type: 'string',
    placeholder: 'DIR',
    description:
      'directory of the credential cache (default: $KUBECACHEDIR or ~/.kube/cache, then clusterprofile/<provider>)',
  },
  'force-refresh': { type: 'boolean', description: 'ignore a cached credential and obtain a new one' },
  help: { type: 'boolean', description: 'show this help' },
  version: { type: 'boolean', description: 'print the version of clusterprofile-credentials (the plugin runtime)' },
} as const satisfies FlagSpecs;

/** What the command line asks for. */
export interface PluginCommand<F extends FlagSpecs> {
  /** `credential` (the default: print an ExecCredential), `clean` (empty the cache), `help` or `version`. */
  action: 'credential' | 'clean' | 'help' | 'version';
  flags: FlagValues<F>;
  cacheDir: string | undefined;
  forceRefresh: boolean;
}

/**
 * Parses `argv` (without the node and script paths). Throws `ERR_PLUGIN_USAGE` with the flag as `path`.
 *
 * @example
 * ```ts
 * parseCommand(provider, ['clean', '--cache-dir', '/tmp/c']); // { action: 'clean', cacheDir: '/tmp/c', ... }
 * ```
 */
export function parseCommand<F extends FlagSpecs>(
  provider: Pick<CredentialProvider<F>, 'flags'>,
  argv: readonly string[],
): PluginCommand<F> {
  const options: ParseArgsOptionsConfig = { help: { type: 'boolean', short: 'h' } };
  const all: FlagSpecs = { ...COMMON_FLAGS, ...provider.flags };
  for (const [name, spec] of Object.entries(all)) {
    if (name !== 'help') {
      options[name] = { type: spec.type, ...(spec.multiple === true ? { multiple: true } : {}) };
    }
  }
  let parsed: ParsedArgs | undefined = readCommonForm(argv, options);
  if (parsed === undefined) {
    // Built-ins come from process.getBuiltinModule, not `import` (see README.md, "The plugin runtime", "Start-up").
    const { parseArgs } = process.getBuiltinModule('node:util');
    try {
      parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
    } catch (error) {
      throw usageError(error);
    }
  }
  const { values, positionals } = parsed;
  const action =
    values['help'] === true
      ? 'help'
      : values['version'] === true
        ? 'version'
        : positionals[0] === 'clean'
          ? 'clean'
          : 'credential';
  const extra = action === 'clean' ? positionals.slice(1) : positionals;
  if (action !== 'help' && action !== 'version' && extra.length > 0) {
    throw new CredentialsError('ERR_PLUGIN_USAGE', `unexpected argument '${extra[0]}'`, {
      path: String(extra[0]),
      hint: 'the only command is "clean"; run with --help for the flags',
    });
  }
  const flags: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(provider.flags)) {
    const value = values[name];
    if (spec.type === 'boolean') {
      flags[name] = value === true;
    } else if (spec.multiple === true) {
      flags[name] = value ?? [];
    } else {
      if (value === undefined && spec.required === true && action === 'credential') {
        throw new CredentialsError('ERR_PLUGIN_USAGE', `missing required flag --${name}`, { path: `--${name}` });
      }
      flags[name] = value;
    }
  }
  const cacheDir = values['cache-dir'];
  if (cacheDir === '') {
    throw new CredentialsError('ERR_PLUGIN_USAGE', '--cache-dir must not be empty', { path: '--cache-dir' });
  }
  return {
    action,
    flags: flags as FlagValues<F>,
    cacheDir: typeof cacheDir === 'string' ? cacheDir : undefined,
    forceRefresh: values['force-refresh'] === true,
  };
}

/** Throws a TypeError when a provider declares a flag the runtime owns (a programming mistake). */
export function assertNoFlagClash(flags: FlagSpecs): void {
  for (const name of Object.keys(flags)) {
    if (Object.hasOwn(COMMON_FLAGS, name)) {
      throw new TypeError(`provider flag --${name} clashes with a flag of the plugin runtime`);
    }
  }
}

/** `--help` text. */
export function helpText(command: string, provider: Pick<CredentialProvider, 'description' | 'flags'>): string {
  const lines = [
    `${command}: ${provider.description}`,
    '',
    `usage: ${command} [flags]          print an ExecCredential (kubectl runs this; see KUBERNETES_EXEC_INFO)`,
    `       ${command} clean [flags]    remove this plugin's cached credentials`,
    '',
    'flags:',
  ];
  const all: FlagSpecs = { ...provider.flags, ...COMMON_FLAGS };
  for (const [name, spec] of Object.entries(all)) {
    const left = `  --${name}${spec.type === 'string' ? ` ${spec.placeholder ?? 'VALUE'}` : ''}`;
    const notes = [spec.required === true ? 'required' : '', spec.multiple === true ? 'repeatable' : ''].filter(
      Boolean,
    );
    lines.push(`${left.padEnd(30)} ${spec.description}${notes.length > 0 ? ` (${notes.join(', ')})` : ''}`);
  }
  lines.push('', 'exit codes: 0 ok, 1 no credential (see the message), 2 usage or configuration error');
  return `${lines.join('\n')}\n`;
}

function usageError(error: unknown): CredentialsError {
  const message = error instanceof Error ? error.message : String(error);
  const flag = /'(-{1,2}[^'\s]+)/.exec(message)?.[1];
  // parseArgs appends advice about '--' positionals that only confuses here.
  const first = (message.split('\n')[0] ?? message).replace(/\. To specify a positional argument.*$/, '');
  return new CredentialsError('ERR_PLUGIN_USAGE', first, {
    ...(flag === undefined ? {} : { path: flag }),
    hint: 'run with --help for the flags',
  });
}
