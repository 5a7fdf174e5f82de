/**
 * The composition root of the `clusterprofile` binary: `clusterprofile <command> [options]`.
 *
 * yargs parses (strict: unknown options and commands are usage errors; an unknown command or action is answered with
 * the nearest known one as a hint); the chosen subcommand's module is loaded on demand and runs with the process's
 * side effects passed in. A bare call lists the commands; `<command> <action> --help` shows that action only. Exit codes: 0 success, 1 a failure (one line on stderr,
 * `CODE: message (at path)`), 2 a usage error (src/base/error-registry.ts gives each code its exit code). Nothing is
 * written to stdout on an error, and no stack trace ever.
 *
 * @example
 * ```ts
 * import { run } from './main.js';
 * const code = await run(['kubeconfig', '--profile', 'spoke-1.yaml'], process.env, process);
 * ```
 */
// First: @peculiar/x509 (imported from node_modules by the issuer's chunk) needs Reflect metadata before it loads.
import '../base/reflect-shim.js';
import yargs, { type Argv } from 'yargs';
import { CredentialsError, formatError, isCredentialsError } from '../base/errors.js';
import type { Run } from '../base/io.js';
import type { ActionSpec, CommandArgs, CommandContext, CommandModule } from './command.js';
import { SCRIPT, unknownCommand, usageErrorFor, type KnownOptions } from './usage-error.js';
import { packageVersion } from '../base/version.js';
import { commands } from './commands/index.js';

export const run: Run = async (argv, env, io) => {
  const words = [...argv];
  const name = words.find((word) => !word.startsWith('-'));
  const entry = commands.find((candidate) => commandName(candidate.command) === name);
  if (name !== undefined && entry === undefined) {
    const names = commands.map((candidate) => commandName(candidate.command));
    return usageError(io, unknownCommand(name, names, words));
  }

  let module: CommandModule | undefined;
  try {
    module = entry === undefined ? undefined : await entry.load();
  } catch (error) {
    io.stderr.write(`${formatError(error)}\n`);
    return 1;
  }
  // `<command> <action> --help` shows that action only.
  const actions = module?.actions;
  const action =
    actions === undefined || name === undefined
      ? undefined
      : words.slice(words.indexOf(name) + 1).find((word) => Object.hasOwn(actions, word));

  const parser = yargs()
    .scriptName(SCRIPT)
    .usage(`$0 <command> [options]`)
    .strict()
    .demandCommand(1, 'a command is required')
    .help()
    .alias('help', 'h')
    .version(packageVersion())
    .wrap(100)
    .exitProcess(false)
    .showHelpOnFail(false);
  // What the command's builder declared: the usage error of a mistyped flag or value names the nearest.
  let options: KnownOptions | undefined;
  for (const candidate of commands) {
    if (candidate === entry && module !== undefined) {
      const loaded = module;
      parser.command(candidate.command, candidate.describe, (sub: Argv) => {
        const built = loaded.builder(sub);
        const declared = optionsOf(built);
        options = { key: { ...declared.key }, alias: { ...declared.alias }, choices: { ...declared.choices } };
        return action === undefined ? built : forAction(built, loaded.actions![action]!);
      });
    } else {
      parser.command(candidate.command, candidate.describe);
    }
  }

  if (words.length === 0) {
    // A bare call: the command list, as a usage error.
    io.stderr.write(
      `${await parser.getHelp()}\n\n${formatError(new CredentialsError('ERR_USAGE', 'a command is required'))}\n`,
    );
    return 2;
  }

  const parsed = await new Promise<{ error: Error | undefined; args: CommandArgs; output: string }>((resolve) => {
    parser.parse(words, {}, (error, args, output) => {
      resolve({ error: error ?? undefined, args: args as unknown as CommandArgs, output });
    });
  });

  if (parsed.error !== undefined) {
    const flags = action === undefined ? undefined : actions?.[action]?.flags;
    return usageError(
      io,
      usageErrorFor(parsed.error.message, {
        words,
        ...(entry === undefined ? {} : { command: commandName(entry.command) }),
        ...(action === undefined ? {} : { command: `${commandName(entry!.command)} ${action}` }),
        ...(flags === undefined ? {} : { flags }),
        ...(options === undefined ? {} : { options }),
        ...(parsed.args === undefined ? {} : { args: parsed.args }),
      }),
    );
  }
  if (parsed.output !== '') {
    // --help, --version
    io.stdout.write(`${parsed.output}\n`);
    return 0;
  }
  if (module === undefined) {
    // Unreachable: strict parsing rejects unknown commands.
    return 2;
  }

  const context: CommandContext = { env, io, cwd: process.cwd() };
  try {
    return await module.run(parsed.args, context);
  } catch (error) {
    io.stderr.write(`${formatError(error)}\n`);
    // The registry's exit code (ERR_USAGE for a flag an action needs exits 2, like one yargs finds); anything else 1.
    return (isCredentialsError(error) ? error.exitCode : undefined) ?? 1;
  }
};

function commandName(command: string): string {
  return command.split(' ')[0] ?? command;
}

function usageError(io: Parameters<Run>[2], error: CredentialsError): number {
  io.stderr.write(`${formatError(error)}\n`);
  return error.exitCode ?? 2;
}

/** yargs' `getOptions()` (missing from @types/yargs 17): every key the builder declared, aliases, choices. */
function optionsOf(parser: Argv<object>): KnownOptions {
  return (parser as unknown as { getOptions(): KnownOptions }).getOptions();
}

/** The help of one action: its usage line and description, and only the flags it reads. */
function forAction(parser: Argv<object>, action: ActionSpec): Argv<object> {
  if (action.flags !== undefined) {
    const shown = new Set([...action.flags, 'help', 'version']);
    const { key: keys } = optionsOf(parser);
    for (const key of Object.keys(keys)) {
      if (!shown.has(key)) parser.hide(key);
    }
  }
  // usage(null) drops the command's usage lines (usage() adds to them).
  return parser.usage(null as unknown as string).usage(`${action.usage}\n\n${action.describe}`);
}
