/**
 * Comments and strings that name a file of this repository name one that exists. Files move (src/library/ split into
 * resolve, exec, fleet and client-node; the HTTP seam into src/base/http/; docs into docs/reference/ and
 * docs/explanation/), and a comment still pointing at the old place sends its reader nowhere.
 *
 * Two kinds of mention, in every source file under src/, test/, bench/ and scripts/:
 * - a repository path anywhere in the text (comment or string): `src/….ts|mjs|js`, `docs/….md`, `schemas/….json`,
 *   and any `test/…`, `bench/…`, `scripts/…`, `deploy/…` (a file or a folder);
 * - a module of src/ named without it (`base/http.ts`, `library/index.ts`), in a comment or a string;
 * - a relative file in a comment (`./x.ts`, `../y/z.ts`), resolved from the folder of the file that holds it.
 *
 * A `.js` path of src/ or test/ may name the `.ts` file it is built from. Globs and templates (`test/unit/*.ts`,
 * `src/${room}/`) are not paths and are skipped, and so are fenced code blocks in comments (a TSDoc `@example` is
 * written as if from elsewhere: a provider's folder, a file of the reader's). {@link ILLUSTRATIONS} lists the few
 * made-up mentions on purpose (the self-checks' fixtures, a comment that shows a form); this file itself, made of
 * made-up paths, is not scanned (its self-check shows the checker at work).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Folders scanned, and folders under them that are not ours (upstream copies, build output). */
const SCANNED = ['src', 'test', 'bench', 'scripts'];
const SKIPPED = new Set([
  'src/generated',
  'test/fixtures/upstream',
  'node_modules',
  '.cache',
  // This file: made of the made-up paths of its self-check and of the list below.
  'test/unit/source-references.test.ts',
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (SKIPPED.has(path) || SKIPPED.has(entry.name)) return [];
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|mjs|js)$/.test(entry.name) ? [path] : [];
  });
}

/** Mentions that name nothing on purpose, by file: each must still be there (the list cannot rot). */
const ILLUSTRATIONS: Readonly<Record<string, readonly string[]>> = {
  // "Comments can quote `import('./x.js')`": the form the import scanner must not take for an import.
  'test/unit/architecture.test.ts': ['./x.js'],
  // The self-check of the docs' link checker: links to pages that do not exist.
  'test/unit/docs.test.ts': ['docs/no-such-file.md', 'docs/reference/no-such-page.md', 'docs/reference/api/other.md'],
  // package.json's exports, written relative to the package root: `./dist/a/b.d.ts` read as `./src/a/b.ts`.
  'scripts/typedoc-entry-names.mjs': ['./dist/a/b.d.ts', './src/a/b.ts', './package.json'],
};

/**
 * Where the comments of a JavaScript or TypeScript text are: [start, end) ranges. A small scanner: string and
 * template literals are skipped (a `/*` in `'schemas/*.json'` opens no comment); regular expression literals are not
 * told apart from a division, which no file here needs.
 */
function commentRanges(text: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      ranges.push([i, stop]);
      i = stop;
    } else if (c === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? text.length : end;
      ranges.push([i, stop]);
      i = stop;
    } else if (c === "'" || c === '"' || c === '`') {
      i++;
      while (i < text.length && text[i] !== c && (c === '`' || text[i] !== '\n')) i += text[i] === '\\' ? 2 : 1;
      i++;
    } else {
      i++;
    }
  }
  return ranges;
}

/** `text` with the fenced code blocks of its comments blanked (line breaks kept, so positions and lines hold). */
function withoutExamples(text: string, comments: Array<[number, number]>): string {
  let out = text;
  for (const [start, end] of comments) {
    const comment = out.slice(start, end).replace(/```[\s\S]*?```/g, (block) => block.replace(/[^\n]/g, ' '));
    out = out.slice(0, start) + comment + out.slice(end);
  }
  return out;
}

/** A repository path: one of our top folders, not preceded by anything that makes it part of another path or URL. */
const REPO_PATH = /(?<![\w.\-/@~])(src|docs|test|bench|scripts|schemas|deploy)\/[\w.\-/]*/g;
/** A module of src/ named from src/, without it (`base/http.ts`, `library/index.ts`). */
const ROOM_PATH =
  /(?<![\w.\-/@~])(?:base|core|schemas|wire|exec|kube|issuer|plugin|providers|resolve|client-node|fleet|library|cli|generated)\/[\w.\-/]*\.(?:ts|js)\b/g;
/** A relative file (with an extension) in a comment. */
const RELATIVE_PATH = /(?<![\w.\-/@~])\.{1,2}\/[\w.\-/]*\.(?:ts|mts|mjs|js|md|json|yaml)\b/g;

/** Whether `path` (repository-relative) exists, a built `.js` name standing for its `.ts` source. */
function exists(path: string): boolean {
  if (existsSync(join(root, path))) return true;
  return /\.m?js$/.test(path) && existsSync(join(root, path.replace(/\.(m?)js$/, '.$1ts')));
}

/** A mention that names nothing: its line, the mention as written and the repository path it names. */
interface Stale {
  line: number;
  mention: string;
  path: string;
}

/** The mentions in `text` (the content of the repository file `file`) that name nothing. */
function staleReferences(file: string, text: string, fileExists: (path: string) => boolean = exists): Stale[] {
  const stale: Stale[] = [];
  const comments = commentRanges(text);
  const scanned = withoutExamples(text, comments);
  const lineOf = (index: number): number => text.slice(0, index).split('\n').length;
  for (const match of scanned.matchAll(REPO_PATH)) {
    const next = scanned[match.index + match[0].length] ?? '';
    if (next === '*' || next === '$' || next === '{' || next === '<') continue; // a glob or a template
    const path = match[0].replace(/[.-]+$/, '');
    const top = path.slice(0, path.indexOf('/'));
    const wanted =
      top === 'src'
        ? /\.(ts|mts|mjs|js)$/.test(path)
        : top === 'docs'
          ? path.endsWith('.md')
          : top === 'schemas'
            ? path.endsWith('.json')
            : path.length > top.length + 1;
    if (wanted && !fileExists(path)) stale.push({ line: lineOf(match.index), mention: path, path });
  }
  for (const match of scanned.matchAll(ROOM_PATH)) {
    const path = `src/${match[0]}`;
    if (!fileExists(path)) stale.push({ line: lineOf(match.index), mention: match[0], path });
  }
  for (const [start, end] of comments) {
    for (const match of scanned.slice(start, end).matchAll(RELATIVE_PATH)) {
      const path = relative(root, join(root, dirname(file), match[0]));
      if (!fileExists(path)) stale.push({ line: lineOf(start + match.index), mention: match[0], path });
    }
  }
  return stale;
}

describe('source references: paths named in comments and strings exist', () => {
  const files = SCANNED.flatMap(sourceFiles);
  const found = new Map(files.map((file) => [file, staleReferences(file, readFileSync(join(root, file), 'utf8'))]));

  it('every repository path and relative file named in src/, test/, bench/ and scripts/ exists', () => {
    expect(files.length).toBeGreaterThan(100);
    const stale = [...found].flatMap(([file, mentions]) =>
      mentions
        .filter((stale) => !(ILLUSTRATIONS[file] ?? []).includes(stale.mention))
        .map(
          (stale) => `${file}:${stale.line}: ${stale.mention}${stale.mention === stale.path ? '' : ` (${stale.path})`}`,
        ),
    );
    expect(stale).toEqual([]);
  });

  it('every built module that bin/, bench/, test/ and scripts/ load from dist/ is built from a source that exists', () => {
    const missing: string[] = [];
    const files = ['bin', ...SCANNED.filter((dir) => dir !== 'src')].flatMap((dir) => sourceFiles(dir));
    for (const file of files) {
      const text = readFileSync(join(root, file), 'utf8');
      for (const match of text.matchAll(/['"]((?:\.{1,2}\/)+dist\/[\w./-]+)\.js['"]/g)) {
        const built = relative(root, join(root, dirname(file), match[1]!));
        // dist/bin/ holds the bundles scripts/build.mjs makes; everything else of dist/ is tsc's output of src/.
        if (!built.startsWith('dist/') || built.startsWith('dist/bin/')) continue;
        const source = `src/${built.slice('dist/'.length)}.ts`;
        if (!existsSync(join(root, source))) missing.push(`${file}: ${match[1]}.js (no ${source})`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('every made-up mention listed as an illustration is still there', () => {
    const gone = Object.entries(ILLUSTRATIONS).flatMap(([file, mentions]) =>
      mentions
        .filter((mention) => !(found.get(file) ?? []).some((stale) => stale.mention === mention))
        .map((mention) => `${file}: ${mention}`),
    );
    expect(gone).toEqual([]);
  });

  it('finds made-up paths, a moved module and a stale relative mention, and skips what is not a path (the check itself can fail)', () => {
    const text = [
      '/**',
      ' * See src/base/no-such-module.ts, docs/no-such-page.md and ./no-such-neighbour.ts;',
      ' * library/fleet/hub.ts moved, base/http.ts did not; dist/library/index.js is a build output.',
      ' * test/unit/architecture.test.ts and ./source-references.test.ts exist.',
      ' * ```ts',
      " * import { run } from './example/main.js'; // src/providers/example/main.ts: an example's own file",
      ' * ```',
      ' */',
      "const fixture = 'test/fixtures/no-such-fixture.json';",
      "const globbed = 'test/unit/*.test.ts', inString = './in-a-string.ts'; // ./a/b.ts",
      "const elsewhere = 'https://github.com/kubernetes/kubernetes/blob/master/test/e2e/none.go';",
    ].join('\n');
    expect(
      staleReferences('test/unit/source-references.test.ts', text).map(({ line, mention }) => `${line}: ${mention}`),
    ).toEqual([
      '2: src/base/no-such-module.ts',
      '2: docs/no-such-page.md',
      '9: test/fixtures/no-such-fixture.json',
      '3: library/fleet/hub.ts',
      '2: ./no-such-neighbour.ts',
      '10: ./a/b.ts',
    ]);
  });
});
