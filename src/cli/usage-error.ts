/**
 * The one way the `clusterprofile` CLI reports a command line it cannot run: an `ERR_USAGE` CredentialsError (exit
 * 2) naming the word that is wrong — an unknown command, action or flag, a value outside a flag's choices — with the
 * nearest known word (src/cli/suggest.ts) put back into the command line as given (`did you mean "clusterprofile
 * fleet status -n fleet"?`) and where the list is. Any other complaint of the parser (a missing value, a missing flag)
 * keeps its words and points at the command's --help. main.ts turns every usage error into one of these; nothing else
 * writes usage errors.
 */
import { CredentialsError } from '../base/errors.js';
import { closest } from './suggest.js';

export const SCRIPT = 'clusterprofile';

/** What the parser knew about the command that ran: yargs' `getOptions()` of its builder, the part read here. */
export interface KnownOptions {
  /** Every option and positional key the builder declared. */
  key: Readonly<Record<string, unknown>>;
  /** key → its aliases. */
  alias: Readonly<Record<string, readonly string[]>>;
  /** key → the values it accepts. */
  choices: Readonly<Record<string, readonly unknown[]>>;
}

/** Where a usage error happened: the words as given, and the command (with its action) they name, if any. */
export interface UsageContext {
  words: readonly string[];
  /** `fleet`, when the command is known. */
  command?: string;
  /** The flags to suggest from: the action's own when it declares them, else every option of the command. */
  flags?: readonly string[];
  options?: KnownOptions;
  /** The parsed arguments yargs returned with its error. */
  args?: Readonly<Record<string, unknown>>;
}

/** An unknown command: the nearest of `known`, else where the list is. */
export function unknownCommand(name: string, known: readonly string[], words: readonly string[]): CredentialsError {
  return unknownWord(
    `command "${name}"`,
    [[name, closest(name, known)]],
    `"${SCRIPT} --help" lists the commands`,
    words,
  );
}

/**
 * The usage error for what yargs refused (`parserMessage`): an unknown action or flag, or a value outside a flag's
 * choices, with the nearest known one; anything else in yargs' words, pointing at --help.
 */
export function usageErrorFor(parserMessage: string, context: UsageContext): CredentialsError {
  const command = context.command === undefined ? SCRIPT : `${SCRIPT} ${context.command}`;
  const help = `"${command} --help"`;
  const options = context.options;
  if (options !== undefined && context.args !== undefined) {
    const unknown = unknownFlags(context.words, options);
    if (unknown.length > 0) {
      const candidates = (context.flags ?? Object.keys(options.key)).filter((flag) => flag.length > 1);
      const what = unknown.map((flag) => `"${dashes(flag)}"`).join(', ');
      return unknownWord(
        `flag${unknown.length > 1 ? 's' : ''} ${what} of ${command}`,
        unknown.map((flag) => {
          const nearest = closest(flag, candidates);
          return [dashes(flag), nearest === undefined ? undefined : dashes(nearest)];
        }),
        `${help} lists the flags`,
        context.words,
        true,
      );
    }
    for (const [key, allowed] of Object.entries(options.choices)) {
      const given = context.args[key];
      const values = Array.isArray(given) ? given : given === undefined ? [] : [given];
      const wrong = values.find((value) => !allowed.includes(value));
      if (wrong === undefined) continue;
      const word = String(wrong);
      const choices = allowed.map(String);
      if (key === 'action') {
        return unknownWord(
          `action "${word}" of ${command}`,
          [[word, closest(word, choices)]],
          `${help} lists the actions`,
          context.words,
        );
      }
      return unknownWord(
        `value "${word}" of --${key} (one of ${choices.join(', ')})`,
        [[word, closest(word, choices)]],
        `${help} explains --${key}`,
        context.words,
      );
    }
  }
  // What is left of yargs' "Unknown argument(s): a, b" once no flag is unknown: words the command takes no place for.
  const extra = /^Unknown arguments?: (.+)$/.exec(parserMessage)?.[1];
  if (extra !== undefined) {
    const listed = extra.split(', ').map((word) => `"${word}"`);
    return new CredentialsError(
      'ERR_USAGE',
      `unexpected argument${listed.length > 1 ? 's' : ''} ${listed.join(', ')} of ${command}`,
      { hint: `${help} shows what it takes` },
    );
  }
  const message = parserMessage.replace(/\s*\n\s*/g, ' ').trim();
  return new CredentialsError('ERR_USAGE', `${message} (see ${help})`);
}

/** The long form of a flag as typed: `-n` or `--namespace`. */
function dashes(flag: string): string {
  return flag.length === 1 ? `-${flag}` : `--${flag}`;
}

/** The flags of `words` (up to a bare `--`) that the command does not declare, without their dashes. */
function unknownFlags(words: readonly string[], options: KnownOptions): string[] {
  const known = new Set<string>(['help', 'h', 'version']);
  for (const key of Object.keys(options.key)) {
    for (const name of [key, ...(options.alias[key] ?? [])]) {
      known.add(name);
      // yargs accepts --fetchTimeout for --fetch-timeout.
      known.add(name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase()));
    }
  }
  const unknown: string[] = [];
  for (const word of words) {
    if (word === '--') break;
    const match = /^-{1,2}([^=]+)/.exec(word);
    if (match?.[1] === undefined || /^-\d/.test(word)) continue;
    const name = match[1];
    // `-abc` is three short flags only when each is one; yargs reads it so.
    const names = word.startsWith('--') || name.length === 1 ? [name] : [...name];
    for (const candidate of names) {
      const positive = candidate.startsWith('no-') ? candidate.slice(3) : candidate;
      if (!known.has(candidate) && !known.has(positive) && !unknown.includes(candidate)) unknown.push(candidate);
    }
  }
  return unknown;
}

/**
 * `unknown <what>`, with a hint that repeats the command line with each wrong word replaced by its nearest known one
 * (when every wrong word has one) and says where the list is.
 */
function unknownWord(
  what: string,
  replacements: ReadonlyArray<readonly [string, string | undefined]>,
  list: string,
  words: readonly string[],
  flags = false,
): CredentialsError {
  const complete = replacements.every(([, nearest]) => nearest !== undefined);
  let hint = list;
  if (complete) {
    const pending = new Map(replacements.map(([wrong, nearest]) => [wrong, nearest!]));
    const corrected = words.map((word) => {
      for (const [wrong, nearest] of pending) {
        // The word itself; `--flag=value` for a flag, `--flag=value` or `-o=value` for a value.
        let replaced: string | undefined;
        if (word === wrong) replaced = nearest;
        else if (flags && word.startsWith(`${wrong}=`)) replaced = `${nearest}${word.slice(wrong.length)}`;
        else if (!flags && word.endsWith(`=${wrong}`)) replaced = `${word.slice(0, -wrong.length)}${nearest}`;
        if (replaced !== undefined) {
          pending.delete(wrong);
          return replaced;
        }
      }
      return word;
    });
    hint = `did you mean "${SCRIPT} ${corrected.join(' ')}"? ${list}`;
  }
  return new CredentialsError('ERR_USAGE', `unknown ${what}`, { hint });
}
