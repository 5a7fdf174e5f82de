/**
 * Every help text the package prints: each plugin binary's --help (the built bins, child processes), and
 * `clusterprofile --help`, `<command> --help` for every command and `<command> <action> --help` for every action (the
 * CLI's composition root in process: two dozen texts). No flag is
 * listed twice, and no entry says the same note twice — "(repeatable) (repeatable)" once came from a description
 * that said "repeatable" and the note the help adds for a repeatable flag.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commands } from '../../src/cli/commands/index.js';
import { run } from '../../src/cli/main.js';
import { captureIo, ROOT } from '../helpers/library-cli.js';
import { runNode } from '../helpers/process.js';

const { bin } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };

/** The command lines whose help is checked: every command, and every action of the commands that have some. */
async function helpCommands(): Promise<string[][]> {
  const lines: string[][] = [[]];
  for (const entry of commands) {
    const name = entry.command.split(' ')[0]!;
    lines.push([name]);
    const module = await entry.load();
    for (const action of Object.keys(module.actions ?? {})) lines.push([name, action]);
  }
  return lines;
}

/**
 * The entries of a help text: a line that starts with a flag, with the lines that continue it (deeper indent); the
 * examples after them are not entries.
 */
function entries(help: string): string[] {
  const found: string[] = [];
  let current: string | undefined;
  for (const line of help.split(/^Examples:$/m)[0]!.split('\n')) {
    if (/^\s{1,8}-/.test(line)) {
      if (current !== undefined) found.push(current);
      current = line.trim();
    } else if (current !== undefined && /^\s{6,}\S/.test(line)) {
      current += ` ${line.trim()}`;
    } else {
      if (current !== undefined) found.push(current);
      current = undefined;
    }
  }
  if (current !== undefined) found.push(current);
  return found;
}

/** What is said twice in one entry: a note in () or [], or the words repeatable/required; and flags listed twice. */
function duplicates(help: string): string[] {
  const problems: string[] = [];
  const flags = new Set<string>();
  for (const entry of entries(help)) {
    const flag = /^(?:-\w, )?(--[\w-]+)/.exec(entry)?.[1];
    if (flag !== undefined) {
      if (flags.has(flag)) problems.push(`${flag} is listed twice`);
      flags.add(flag);
    }
    const notes = [...entry.matchAll(/\(([^()]+)\)|\[([^[\]]+)\]/g)].map((match) => match[0]);
    for (const note of new Set(notes)) {
      if (notes.filter((other) => other === note).length > 1) problems.push(`${note} twice in: ${entry}`);
    }
    for (const word of ['repeatable', 'required']) {
      if ((entry.match(new RegExp(`\\b${word}\\b`, 'gi')) ?? []).length > 1)
        problems.push(`${word} twice in: ${entry}`);
    }
  }
  return problems;
}

describe('help texts say each thing once', () => {
  it('the check finds what it looks for', () => {
    expect(duplicates('  --audience AUD   token audience, repeatable (default: x) (repeatable)\n')).toEqual([
      'repeatable twice in: --audience AUD   token audience, repeatable (default: x) (repeatable)',
    ]);
    expect(duplicates('  --a   x [string] [string]\n  --a   y\n')).toEqual([
      '[string] twice in: --a   x [string] [string]',
      '--a is listed twice',
    ]);
  });

  it.each(Object.entries(bin).filter(([name]) => name !== 'clusterprofile'))('%s --help', async (_name, script) => {
    const result = await runNode(join(ROOT, script), ['--help']);
    expect(result.code, result.stderr).toBe(0);
    expect(entries(result.stdout).length).toBeGreaterThan(3);
    expect(duplicates(result.stdout)).toEqual([]);
  });

  it('clusterprofile --help, every command and every action', async () => {
    const lines = await helpCommands();
    expect(lines.length).toBeGreaterThan(commands.length);
    for (const words of lines) {
      const captured = captureIo();
      expect(await run([...words, '--help'], {}, captured.io), captured.stderr()).toBe(0);
      expect(duplicates(captured.stdout()), `clusterprofile ${words.join(' ')} --help`).toEqual([]);
    }
  });
});
