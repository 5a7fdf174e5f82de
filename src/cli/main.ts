/**
 * The composition root of the `clusterprofile` binary: `clusterprofile <command> [options]`.
 *
 * yargs parses (strict: unknown options and commands are usage errors); the chosen subcommand's module is loaded on
 * demand and runs with the process's side effects passed in. Exit codes: 0 success, 1 a failure (one line on stderr,
 * `CODE: message (at path)`), 2 a usage error (src/core/error-registry.ts gives each code its exit code). Nothing is
 * written to stdout on an error, and no stack trace ever.
 *
 * @example
 * ```ts
 * import { run } from './main.js';
 * const code = await run(['kubeconfig', '--profile', 'spoke-1.yaml'], process.env, process);
 * ```
 */
import yargs, { type Argv } from 'yargs';
import { CredentialsError, formatError, isCredentialsError } from '../core/errors.js';
import type { Run } from '../core/io.js';
import type { CommandArgs, CommandContext, CommandModule } from './command.js';
import { commands } from './commands/index.js';

const SCRIPT = 'clusterprofile';

export const run: Run = async (argv, env, io) => {
  const words = [...argv];
  const name = words.find((word) => !word.startsWith('-'));
  const entry = commands.find((candidate) => commandName(candidate.command) === name);

  let module: CommandModule | undefined;
  try {
    module = entry === undefined ? undefined : await entry.load();
  } catch (error) {
    io.stderr.write(`${formatError(error)}\n`);
    return 1;
  }

  const parser = yargs()
    .scriptName(SCRIPT)
    .usage(`$0 <command> [options]`)
    .strict()
    .demandCommand(1, 'a command is required')
    .recommendCommands()
    .help()
    .alias('help', 'h')
    .version(false)
    .wrap(100)
    .exitProcess(false)
    .showHelpOnFail(false);
  for (const candidate of commands) {
    if (candidate === entry && module !== undefined) {
      const loaded = module;
      parser.command(candidate.command, candidate.describe, (sub: Argv) => loaded.builder(sub));
    } else {
      parser.command(candidate.command, candidate.describe);
    }
  }

  const parsed = await new Promise<{ error: Error | undefined; args: CommandArgs; output: string }>((resolve) => {
    parser.parse(words, {}, (error, args, output) => {
      resolve({ error: error ?? undefined, args: args as unknown as CommandArgs, output });
    });
  });

  if (parsed.error !== undefined) {
    const where = entry === undefined ? '' : ` ${commandName(entry.command)}`;
    const usage = new CredentialsError(
      'ERR_USAGE',
      `${parsed.error.message} (see "${SCRIPT}${where} --help")`,
    );
    io.stderr.write(`${formatError(usage)}\n`);
    return usage.exitCode ?? 2;
  }
  if (parsed.output !== '') {
    // --help
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
