/**
 * The API reference docs/reference/api/ is what `npm run docs:api` (TypeDoc, typedoc.json) writes, covers the three
 * package exports, and every public export has a TSDoc summary in it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importNames } from '../../scripts/typedoc-entry-names.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const apiDir = join(root, 'docs', 'reference', 'api');

/** typedoc.json is JSON with comments, which TypeDoc reads with TypeScript's config reader. */
const typedocConfig = ts.readConfigFile(join(root, 'typedoc.json'), ts.sys.readFile).config as {
  entryPoints: string[];
};

/** Every file under `dir`, relative to it, sorted. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/** The named exports of each entry file, each with its declaration's TSDoc summary ('' when it has none). */
function exportsOf(entries: string[]): Map<string, { name: string; doc: string }[]> {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  );
  const program = ts.createProgram(entries, { ...config!.options, noEmit: true });
  const checker = program.getTypeChecker();
  return new Map(
    entries.map((entry) => {
      const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
      const named = checker.getExportsOfModule(module).map((symbol) => {
        const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        return { name: symbol.name, doc: ts.displayPartsToString(target.getDocumentationComment(checker)).trim() };
      });
      return [entry, named];
    }),
  );
}

/** The names in `exports` without a TSDoc summary, as `file: name`. */
function undocumented(exports: Map<string, { name: string; doc: string }[]>): string[] {
  return [...exports].flatMap(([entry, named]) =>
    named.filter(({ doc }) => doc === '').map(({ name }) => `${relative(root, entry)}: ${name}`),
  );
}

/** GitHub's heading anchor, as test/unit/docs.test.ts reads it: lower case, punctuation dropped but `-` and `_`. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/**
 * Each heading of a page by its GitHub anchor (`-1`, `-2` for repeats), as `### name`: a member's heading is of level 3,
 * a parameter's deeper. The reference's pages have no code fences.
 */
function headings(markdown: string): Map<string, string> {
  const seen = new Map<string, number>();
  const result = new Map<string, string>();
  for (const [, marks, text] of markdown.matchAll(/^(#{1,6})\s+(.*?)\s*$/gm)) {
    const base = slug(text!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.set(count === 0 ? base : `${base}-${count}`, `${marks} ${text}`);
  }
  return result;
}

describe('API reference (docs/reference/api/)', () => {
  let generated: string;

  // TypeDoc converts the library and renders 114 pages in a child process: 2.7 s alone on a 2-core host (4.5 s
  // cold), too close to the 10 s hook default once the whole unit suite runs beside it.
  beforeAll(() => {
    generated = mkdtempSync(join(tmpdir(), 'docs-api-'));
    const run = spawnSync('npm', ['run', '--silent', 'docs:api', '--', '--out', generated, '--logLevel', 'Error'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(run.status, `npm run docs:api failed:\n${run.stdout}${run.stderr}`).toBe(0);
  }, 60_000);

  afterAll(() => {
    if (generated !== undefined) rmSync(generated, { recursive: true, force: true });
  });

  it('is what `npm run docs:api` writes (run it after changing an export or its TSDoc)', () => {
    expect(files(apiDir), 'the pages: run `npm run docs:api`').toEqual(files(generated));
    const stale = files(generated).filter(
      (file) => readFileSync(join(apiDir, file), 'utf8') !== readFileSync(join(generated, file), 'utf8'),
    );
    expect(stale, 'stale pages: run `npm run docs:api`').toEqual([]);
  });

  it("documents package.json's exports, each under the name users import", () => {
    const sources = [...importNames().keys()].map((file) => relative(root, file));
    expect(typedocConfig.entryPoints).toEqual(sources);
    const index = readFileSync(join(apiDir, 'README.md'), 'utf8');
    for (const name of importNames().values()) expect(index).toContain(`[${name}](${name}/README.md)`);
  });

  // A whole TypeScript program over the three entry points (1.6-1.8 s alone): too close to the 5 s default under load.
  it('lists every export of each entry point on its page, and every export has a TSDoc summary', () => {
    const names = importNames();
    const exports = exportsOf([...names.keys()]);
    const missing = [...exports].flatMap(([entry, named]) => {
      // A page escapes Markdown in link texts (`COMMON\_FLAGS`); each export is a link, in a table or a re-export.
      const page = readFileSync(join(apiDir, names.get(entry)!, 'README.md'), 'utf8').replaceAll('\\', '');
      return named.filter(({ name }) => !page.includes(`[${name}](`)).map(({ name }) => `${names.get(entry)}: ${name}`);
    });
    expect(missing).toEqual([]);
    expect(undocumented(exports), 'write a one-sentence TSDoc summary on each').toEqual([]);
  }, 30_000);

  // docs.test.ts checks that an anchor exists, not where it lands: with parameters as headings (`##### settings`),
  // `[CredentialProvider.settings](CredentialProvider.md#settings-1)` landed on a parameter, not the method.
  it('links a member to its own heading', () => {
    const wrong = files(apiDir).flatMap((file) => {
      const text = readFileSync(join(apiDir, file), 'utf8');
      return [...text.matchAll(/\[([^\]]*)\]\(([^)#:]*)#([^)]+)\)/g)].flatMap(([link, label, path, anchor]) => {
        const target = path === '' ? join(apiDir, file) : join(apiDir, dirname(file), path!);
        const heading = headings(readFileSync(target, 'utf8')).get(anchor!);
        const member = label!.replace(/[\\`]/g, '').split('.').pop();
        return heading?.replace(/\\/g, '').replace(/(\(\))?\??$/, '') === `### ${member}`
          ? []
          : [`${file}: ${link} -> ${heading}`];
      });
    });
    expect(wrong).toEqual([]);
  });

  it('finds an export without TSDoc (the check above can fail)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'docs-api-sample-'));
    try {
      const entry = resolve(dir, 'index.ts');
      writeFileSync(join(dir, 'a.ts'), '/** Documented. */\nexport const a = 1;\nexport const b = 2;\n');
      writeFileSync(entry, "export { a, b } from './a.js';\n// A line comment is no TSDoc.\nexport type C = string;\n");
      const found = undocumented(exportsOf([entry])).map((line) => line.split(': ')[1]);
      expect(found).toEqual(['b', 'C']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
