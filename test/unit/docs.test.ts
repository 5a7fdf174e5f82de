/**
 * The documentation holds together: README.md stays a small front door, every relative link in README.md and
 * every Markdown page under docs/ (in every folder) reaches a file (and, for `file.md#anchor`, a heading of that file), and no
 * document points at material outside the repository.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const readme = join(root, 'README.md');
const docsDir = join(root, 'docs');

/**
 * Written by generators, not by hand: a branch may predate them, so a link to one counts once it exists. The errors
 * page comes from `npm run docs:errors`; the library's API reference from `npm run docs:api` (TypeDoc, its own folder).
 */
const GENERATED = new Set([join(docsDir, 'reference', 'errors.md'), join(docsDir, 'reference', 'api', 'README.md')]);

const README_LIMIT_BYTES = 25_000;

/** Every Markdown file under `dir`, in every folder, sorted. */
function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return markdownFiles(path);
      return entry.name.endsWith('.md') ? [path] : [];
    })
    .sort();
}

const documents: string[] = [readme, ...markdownFiles(docsDir)];

const name = (file: string): string => relative(root, file);

/** The text outside fenced code blocks and inline code spans: links and headings are only read there. */
function prose(markdown: string): string {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      lines.push('');
      continue;
    }
    if (marker !== undefined) {
      fence = marker;
      lines.push('');
      continue;
    }
    lines.push(line.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, (span) => span.replace(/[[\]()]/g, ' ')));
  }
  return lines.join('\n');
}

/** GitHub's heading anchor: lower case, punctuation dropped except `-` and `_`, each space a `-`. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a document, with GitHub's `-1`, `-2` suffixes for repeated headings. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      continue;
    }
    if (marker !== undefined) {
      fence = marker;
      continue;
    }
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

interface Link {
  from: string;
  target: string;
}

function links(file: string): Link[] {
  const text = prose(readFileSync(file, 'utf8'));
  const found: Link[] = [];
  for (const match of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    found.push({ from: file, target: match[1]! });
  }
  for (const match of text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)) {
    found.push({ from: file, target: match[1]! });
  }
  return found;
}

/** Why a link does not resolve, or undefined when it does. */
function problem({ from, target }: Link): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // http(s), mailto: not checked here
  const hash = target.indexOf('#');
  const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const file = path === '' ? from : join(dirname(from), path);
  if (!existsSync(file)) {
    return GENERATED.has(file) ? undefined : `${name(file)} does not exist`;
  }
  if (anchor === undefined) return undefined;
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return `#${anchor}: ${name(file)} is not a Markdown file`;
  return anchors(readFileSync(file, 'utf8')).has(anchor) ? undefined : `${name(file)} has no heading #${anchor}`;
}

describe('documentation', () => {
  it(`README.md is at most ${README_LIMIT_BYTES} bytes`, () => {
    expect(statSync(readme).size).toBeLessThanOrEqual(README_LIMIT_BYTES);
  });

  // A whole TypeScript program over the library, not pure logic: the unit layer's 5 s default is too short for it on a
  // slower 2-core host (5.8 s under the suite's load there).
  it('the TypeScript examples of README.md compile against the library as users import it', () => {
    const blocks = [...readFileSync(readme, 'utf8').matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((match) => match[1]!);
    expect(blocks.length, 'the controller and the fleet examples').toBeGreaterThanOrEqual(2);
    // Inside the repository, so that @kubernetes/client-node resolves from its node_modules and package.json's
    // "type": "module" makes them ES modules (top-level await); the package name points at the library's source.
    const dir = mkdtempSync(join(root, 'test', '.readme-examples-'));
    try {
      const files = blocks.map((code, index) => {
        const file = join(dir, `example-${index}.ts`);
        writeFileSync(file, code);
        return file;
      });
      const config = ts.getParsedCommandLineOfConfigFile(
        join(root, 'tsconfig.json'),
        {},
        { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
      );
      const program = ts.createProgram(files, {
        ...config!.options,
        noEmit: true,
        rootDir: root,
        noUnusedLocals: false, // an example ends with the value a reader goes on with
        paths: { 'clusterprofile-credentials': [join(root, 'src/library/index.ts')] },
      });
      const problems = ts
        .getPreEmitDiagnostics(program)
        .filter((diagnostic) => diagnostic.file !== undefined && files.includes(diagnostic.file.fileName))
        .map(
          (diagnostic) =>
            `${relative(dir, diagnostic.file!.fileName)}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`,
        );
      expect(problems).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('README.md shows how to install the package', () => {
    expect(readFileSync(readme, 'utf8')).toContain('npm install');
  });

  it('every relative link in README.md and docs/**/*.md reaches an existing file and heading', () => {
    const broken = documents
      .flatMap(links)
      .map((link) => ({ link, why: problem(link) }))
      .filter(({ why }) => why !== undefined)
      .map(({ link, why }) => `${name(link.from)}: (${link.target}) ${why}`);
    expect(broken).toEqual([]);
  });

  it('no document points at material outside the repository', () => {
    const offending = documents.flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return [
        ...(text.includes('../shared') ? [`${name(file)} mentions ../shared`] : []),
        ...(/STYLE/.test(text) ? [`${name(file)} mentions STYLE`] : []),
      ];
    });
    expect(offending).toEqual([]);
  });

  it('reads links and anchors the way GitHub does (the checks above can fail)', () => {
    expect(slug('Known limits (client-node 2.0.x)')).toBe('known-limits-client-node-20x');
    expect(slug('`clusterprofile tenant`: the manual flow')).toBe('clusterprofile-tenant-the-manual-flow');
    expect(slug('tenant-cert, consumer side — `keygen`')).toBe('tenant-cert-consumer-side--keygen');
    expect(slug('snake_case [a link](x.md) stays')).toBe('snake_case-a-link-stays');
    const sample = join(docsDir, 'guides', 'controller.md');
    expect(problem({ from: readme, target: 'docs/guides/controller.md' })).toBeUndefined();
    expect(problem({ from: readme, target: 'docs/no-such-file.md' })).toBe('docs/no-such-file.md does not exist');
    expect(problem({ from: sample, target: '#no-such-heading' })).toBe(
      'docs/guides/controller.md has no heading #no-such-heading',
    );
    expect(problem({ from: sample, target: '../reference/cli.md#no-such-heading' })).toBe(
      'docs/reference/cli.md has no heading #no-such-heading',
    );
    expect(problem({ from: sample, target: '../reference/no-such-page.md' })).toBe(
      'docs/reference/no-such-page.md does not exist',
    );
    expect(problem({ from: sample, target: 'https://example.com/missing' })).toBeUndefined();
    expect(links(readme).some((link) => link.target === 'docs/guides/controller.md')).toBe(true);
    expect(documents).toContain(join(docsDir, 'reference', 'cli.md'));
    expect(documents).toContain(join(docsDir, 'explanation', 'architecture.md'));
    // Only the generated pages may be absent; another page under reference/api/ may not.
    expect(problem({ from: sample, target: '../reference/api/README.md' })).toBeUndefined();
    expect(problem({ from: sample, target: '../reference/api/other.md' })).toBe(
      'docs/reference/api/other.md does not exist',
    );
    expect(anchors('# A\n```\n# not a heading\n```\n## A\n')).toEqual(new Set(['a', 'a-1']));
  });
});
