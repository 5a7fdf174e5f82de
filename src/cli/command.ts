/**
 * The contract between the `clusterprofile` composition root (main.ts) and its subcommands. A subcommand is a
 * module in `src/cli/commands/<name>.ts` exporting {@link CommandModule}'s two functions, registered with one line in
 * `src/cli/commands/index.ts`. Modules are imported only when their command runs (each is its own bundle chunk).
 */
import type { Argv } from 'yargs';
import { CredentialsError } from '../base/errors.js';
import type { Env, ProcessIo } from '../base/io.js';

/** What a subcommand receives besides its arguments: the process's side effects, passed in (conventions: side effects are passed in). */
export interface CommandContext {
  env: Env;
  io: ProcessIo;
  /** The directory relative paths are resolved against. */
  cwd: string;
}

/** The parsed arguments: yargs' result (`_` holds the positional path, e.g. `['tenant', 'create']`). */
export type CommandArgs = { readonly [key: string]: unknown; readonly _: readonly (string | number)[] };

/**
 * The named exports of a subcommand module.
 *
 * - `builder` declares the command's options (and nested commands) on the yargs instance. Validation that yargs can
 *   do (`demandOption`, `choices`, `conflicts`, `check`) becomes a usage error: exit code 2.
 * - `run` does the work and returns the exit code. Throw a `CredentialsError` for bad input: main prints it as one
 *   line on stderr and exits with the exit code the error registry gives its code (1; 2 for `ERR_USAGE` and other
 *   input the user must change). Write to `ctx.io.stdout` only once everything succeeded.
 */
export interface CommandModule {
  builder(parser: Argv): Argv<object>;
  run(args: CommandArgs, ctx: CommandContext): Promise<number>;
  /**
   * The actions of a command whose first positional is `<action>` (`issuer serve`): `<command> <action> --help`
   * shows only that action's usage and flags, and a mistyped action is answered with the nearest one.
   */
  actions?: Readonly<Record<string, ActionSpec>>;
}

/**
 * One action of a command: its usage line (`$0 issuer list --data-dir DIR`), what it does and the flags it reads
 * (absent: all of the command's).
 */
export interface ActionSpec {
  usage: string;
  describe: string;
  flags?: readonly string[];
}

/** The usage of every action, one per line, then the command's description: the `.usage()` of a command's builder. */
export function actionsUsage(actions: Readonly<Record<string, ActionSpec>>, description: string): string {
  return `${Object.values(actions)
    .map((action) => action.usage)
    .join('\n')}\n\n${description}`;
}

/** One line of the registry in commands/index.ts. */
export interface CommandEntry {
  /** The yargs command string, e.g. `kubeconfig` or `tenant <action>`; its first word is the name. */
  command: string;
  /** One line for `clusterprofile --help`. */
  describe: string;
  /** `() => import('./<name>.js')`: loaded only when the command runs. */
  load(): Promise<CommandModule>;
}

/**
 * A flag an action of a command cannot do without (yargs cannot express "required for this action only"): its
 * string value, or `ERR_USAGE` (exit 2) naming the flag, e.g. `issuer trust needs --public-key`.
 */
export function requiredFlag(args: CommandArgs, flag: string, usage: string): string {
  const value = args[flag];
  if (typeof value !== 'string' || value === '') {
    throw new CredentialsError('ERR_USAGE', `${usage} needs --${flag}`, { path: `--${flag}` });
  }
  return value;
}
