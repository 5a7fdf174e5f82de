/**
 * Runs a documentation page as a reader would: its files (code blocks with `title="<file>"`) written to a
 * directory, its shell blocks (```sh) run there line by line. Pages written for this keep one command per line.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CodeBlock {
  language: string;
  /** The file name of a block with `title="…"`. */
  title: string | undefined;
  body: string;
}

/** The fenced code blocks of a Markdown text, in order. */
export function codeBlocks(markdown: string): CodeBlock[] {
  return [...markdown.matchAll(/^```(\w+)([^\n]*)\n([\s\S]*?)^```$/gm)].map(([, language, info, body]) => ({
    language: language!,
    title: /title="([^"]+)"/.exec(info!)?.[1],
    body: body!,
  }));
}

/** The non-empty lines of the ```sh blocks, a line ending in `\` joined with the next (one command). */
export function shellLines(blocks: readonly CodeBlock[]): string[] {
  return blocks
    .filter((block) => block.language === 'sh')
    .flatMap((block) =>
      block.body
        .replace(/\\\n\s*/g, ' ')
        .split('\n')
        .filter((line) => line.trim() !== ''),
    );
}

/** Writes every titled block into `dir` (after `edit`, e.g. a test's own server in place of the example's). */
export function writeFiles(
  blocks: readonly CodeBlock[],
  dir: string,
  edit: (body: string, title: string) => string = (body) => body,
): string[] {
  const titled = blocks.filter((block) => block.title !== undefined);
  for (const block of titled) writeFileSync(join(dir, block.title!), edit(block.body, block.title!));
  return titled.map((block) => block.title!);
}

export interface ShellRun {
  line: string;
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `lines` with bash (-euo pipefail) in `cwd`, one by one, stopping at the first failure. */
export async function runLines(lines: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<ShellRun[]> {
  const runs: ShellRun[] = [];
  for (const line of lines) {
    const run = await new Promise<ShellRun>((resolve) => {
      execFile('bash', ['-euo', 'pipefail', '-c', line], { cwd, env, timeout: 120_000 }, (error, stdout, stderr) => {
        resolve({ line, code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr });
      });
    });
    runs.push(run);
    if (run.code !== 0) break;
  }
  return runs;
}
