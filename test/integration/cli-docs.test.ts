/**
 * docs/reference/cli.md against the CLI itself: every command of the `clusterprofile` command table (src/cli/commands)
 * and every action its built binary offers (`<command> --help`'s `action` choices) has a row in the page's command
 * table and is shown as `clusterprofile <command> <action>` on the page, and every command has its own section.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commands } from '../../src/cli/commands/index.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const page = readFileSync(`${root}docs/reference/cli.md`, 'utf8');
const table = page.slice(0, page.indexOf('\n## '));

/** The actions `clusterprofile <command> --help` offers: the choices of its `action` positional. */
function actionsOf(command: string): string[] {
  const help = spawnSync(process.execPath, [`${root}bin/clusterprofile.mjs`, command, '--help'], { encoding: 'utf8' });
  expect(help.status, help.stderr).toBe(0);
  const positionals = help.stdout.slice(help.stdout.indexOf('Positionals:'));
  const choices = /\baction\b[\s\S]*?\[choices: ([^\]]+)\]/.exec(positionals)?.[1] ?? '';
  return [...choices.matchAll(/"([^"]+)"/g)].map((match) => match[1]!);
}

describe('docs/reference/cli.md lists every command of the CLI', () => {
  const names = commands.map((entry) => entry.command.split(' ')[0]!);

  it.each(names)('clusterprofile %s: a row of the command table, a section, and every action shown', (name) => {
    const rows = table.split('\n').filter((line) => line.startsWith(`| \`${name}`));
    expect(rows, `a row for ${name}`).not.toEqual([]);
    expect(page).toMatch(new RegExp(`^## \`clusterprofile ${name}\\b`, 'm'));
    const actions = commands.find((entry) => entry.command.startsWith(`${name} `))?.command.includes('<action>')
      ? actionsOf(name)
      : [];
    for (const action of actions) {
      expect(page, `clusterprofile ${name} ${action}`).toContain(`clusterprofile ${name} ${action}`);
      expect(rows.join('\n'), `${name} ${action} in the table`).toMatch(new RegExp(`\`(${name} )?${action}[\` ]`));
    }
  });

  it('reads the actions from the binary (the check above can fail)', () => {
    expect(actionsOf('issuer')).toEqual(['serve', 'trust', 'untrust', 'list']);
  });
});
