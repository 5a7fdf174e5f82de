/**
 * The README as the front door: it links every guide, and the Node.js floor is stated in one place
 * (docs/reference/cli.md#install, the `engines` version) that every other page mentioning the floor links to.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string): string => readFileSync(join(root, file), 'utf8');
const floor = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node.replace(/^>=/, '');
/** `22.19.0` and `22.19`: how a page would state it. */
const floorPattern = new RegExp(`\\b${floor.replace(/\.0$/, '').replaceAll('.', '\\.')}\\b`);
const FLOOR_HOME = 'docs/reference/cli.md';

/** README.md and docs/**\/*.md, without the generated API reference and the changelog (history). */
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md') && !file.startsWith('reference/api/'))
    .map((file) => `docs/${file}`),
];

describe('the front door and the facts it points to', () => {
  it('README.md links every guide', () => {
    const readme = read('README.md');
    const guides = readdirSync(join(root, 'docs', 'guides')).filter((file) => file.endsWith('.md'));
    expect(guides).toContain('hub-admin.md');
    expect(guides.filter((guide) => !readme.includes(`](docs/guides/${guide}`))).toEqual([]);
  });

  it(`states the Node.js floor (${floor}) in ${FLOOR_HOME} only, and the pages that mention it link there`, () => {
    expect(read(FLOOR_HOME)).toMatch(new RegExp(`Node\\.js ≥ ${floor.replace(/\.0$/, '').replaceAll('.', '\\.')}\\b`));
    const stating = pages.filter((page) => page !== FLOOR_HOME && floorPattern.test(read(page)));
    expect(stating).toEqual([]);
    const mentioning = pages.filter((page) => page !== FLOOR_HOME && /Node(\.js)? floor|floor \[/i.test(read(page)));
    expect(mentioning.length).toBeGreaterThan(0);
    const unlinked = mentioning.filter((page) => {
      const link = relative(join(root, page, '..'), join(root, FLOOR_HOME));
      return !read(page).includes(`](${link}#install)`);
    });
    expect(unlinked).toEqual([]);
  });
});
