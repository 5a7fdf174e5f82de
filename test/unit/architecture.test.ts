/**
 * The layering of src/ (docs/explanation/architecture.md): imports only point down, and no module imports itself back through
 * a chain of others (static, dynamic and type-only imports all count: a type import still ties two rooms together).
 * Each provider (`src/providers/<type>/`) is entered through its door, `index.ts`, and nowhere else. The issuer
 * (`src/issuer/`, the provider side of tenant-cert) shares with the client side only the documents both ends speak
 * (`src/wire/`): it never imports plugin/ or providers/, and only the CLI imports it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../../src/', import.meta.url));

/**
 * Lowest first. A module may import from its own layer or any layer below. `wire` (the documents both ends of a
 * protocol speak) sits on base and schemas only; `issuer` on base, schemas, wire and kube — the rules below keep the
 * layers above it (plugin, providers, library) from importing it although the order alone would let them.
 */
const LAYERS = [
  'base',
  'schemas',
  'wire',
  'exec',
  'kube',
  'issuer',
  'plugin',
  'providers',
  'resolve',
  'client-node',
  'fleet',
  'library',
  'cli',
] as const;
const LAYER_OF: Record<string, number> = {
  ...Object.fromEntries(LAYERS.map((name, rank) => [name, rank])),
  generated: 1,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return /\.(ts|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [file] : [];
  });
}

/** Comments can quote `import('./x.js')` in TSDoc links; strings cannot hold a `from` of ours. */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

function importsOf(file: string, known: Set<string>): string[] {
  const text = withoutComments(readFileSync(file, 'utf8'));
  const targets: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1]!;
    const base = normalize(join(dirname(file), spec));
    const candidate = [base.replace(/\.js$/, '.ts'), base].find((name) => known.has(name));
    if (candidate === undefined) throw new Error(`${relative(src, file)}: cannot resolve ${spec}`);
    targets.push(candidate);
  }
  return targets;
}

const files = sourceFiles(src);
const known = new Set(files);
const graph = new Map(files.map((file) => [file, importsOf(file, known)]));
const room = (file: string): string =>
  relative(src, file)
    .split('/')[0]!
    .replace(/\.(ts|js)$/, '');

/** Strongly connected components with more than one member, or a module importing itself (Tarjan). */
function cycles(): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(relative(src, member));
      } while (member !== node);
      if (component.length > 1 || graph.get(node)!.includes(node)) found.push(component.sort());
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return found;
}

/** `tenant-cert` for src/providers/tenant-cert/consumer/identity.ts; undefined outside src/providers/. */
const providerOf = (file: string): string | undefined => {
  const parts = relative(src, file).split('/');
  return parts[0] === 'providers' && parts.length > 2 ? parts[1] : undefined;
};
const isDoor = (file: string): boolean => {
  const parts = relative(src, file).split('/');
  return parts.length === 3 && parts[2] === 'index.ts';
};

/** Imports of a provider's module other than its door, by importers outside providers (`others`) or in another provider. */
function doorViolations(importers: 'others' | 'providers'): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = providerOf(file);
    if ((importers === 'others') !== (from === undefined)) continue;
    for (const target of targets) {
      const to = providerOf(target);
      if (to !== undefined && to !== from && !isDoor(target))
        found.push(`${relative(src, file)} -> ${relative(src, target)}`);
    }
  }
  return found;
}

/** Rooms the issuer never imports: it is the provider side, and what it shares with the client is in src/wire/. */
const NEVER_FROM_ISSUER = new Set(['plugin', 'providers']);
/** The only rooms that import the issuer: the issuer itself, and the CLI that runs it. */
const IMPORTERS_OF_ISSUER = new Set(['issuer', 'cli']);

/** Imports by the issuer of plugin/ or providers/ (`from: 'issuer'`), or of the issuer by a room other than the CLI. */
function issuerViolations(direction: 'from' | 'to'): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    for (const target of targets) {
      const broken =
        direction === 'from'
          ? room(file) === 'issuer' && NEVER_FROM_ISSUER.has(room(target))
          : room(target) === 'issuer' && !IMPORTERS_OF_ISSUER.has(room(file));
      if (broken) found.push(`${relative(src, file)} -> ${relative(src, target)}`);
    }
  }
  return found;
}

describe('src/ architecture', () => {
  it('every module is in a known room', () => {
    const unknown = files.map(room).filter((name) => LAYER_OF[name] === undefined);
    expect([...new Set(unknown)]).toEqual([]);
  });

  it('has no import cycles', () => {
    expect(cycles()).toEqual([]);
  });

  it('imports only point down the layers (base < schemas < wire < exec < kube < issuer < plugin < providers < resolve < client-node < fleet < library < cli)', () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        if (LAYER_OF[room(target)]! > LAYER_OF[room(file)]!)
          upward.push(`${relative(src, file)} -> ${relative(src, target)}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('every provider has its door (index.ts) and its composition root (main.ts)', () => {
    const providers = [...new Set(files.map(providerOf).filter((name) => name !== undefined))].sort();
    expect(providers).toEqual(['oidc', 'tenant-cert', 'token-request']);
    const missing = providers.flatMap((name) =>
      ['index.ts', 'main.ts']
        .filter((base) => !known.has(join(src, 'providers', name, base)))
        .map((base) => `providers/${name}/${base}`),
    );
    expect(missing).toEqual([]);
  });

  it('a module outside src/providers/<type>/ imports from that provider only its index.ts', () => {
    expect(doorViolations('others')).toEqual([]);
  });

  it('a provider imports another provider only through its index.ts', () => {
    expect(doorViolations('providers')).toEqual([]);
  });

  it("detects an import past a provider's door (the check itself can fail)", () => {
    const saved = new Map(graph);
    const cli = join(src, 'cli', 'commands', 'keygen.ts');
    const tokenRequest = join(src, 'providers', 'token-request', 'provider.ts');
    const keys = join(src, 'providers', 'tenant-cert', 'settings.ts');
    const door = join(src, 'providers', 'tenant-cert', 'index.ts');
    try {
      graph.set(cli, [...(graph.get(cli) ?? []), keys]);
      graph.set(tokenRequest, [...(graph.get(tokenRequest) ?? []), keys, door]);
      expect(doorViolations('others')).toEqual(['cli/commands/keygen.ts -> providers/tenant-cert/settings.ts']);
      expect(doorViolations('providers')).toEqual([
        'providers/token-request/provider.ts -> providers/tenant-cert/settings.ts',
      ]);
    } finally {
      for (const [key, value] of saved) graph.set(key, value);
    }
  });

  it('the issuer never imports plugin/ or providers/ (the client side)', () => {
    expect(issuerViolations('from')).toEqual([]);
  });

  it('only the CLI imports the issuer (the library, the plugin runtime and the providers never do)', () => {
    expect(issuerViolations('to')).toEqual([]);
  });

  it('detects an issuer import of the client side, and an import of the issuer by the library or the plugin (the check itself can fail)', () => {
    const saved = new Map(graph);
    const setup = join(src, 'issuer', 'setup.ts');
    const library = join(src, 'library', 'index.ts');
    const plugin = join(src, 'plugin', 'run.ts');
    const cli = join(src, 'cli', 'commands', 'keygen.ts');
    const issuer = join(src, 'issuer', 'index.ts');
    const settings = join(src, 'providers', 'tenant-cert', 'settings.ts');
    const provider = join(src, 'plugin', 'provider.ts');
    const wire = join(src, 'wire', 'tenant-cert', 'keys.ts');
    try {
      graph.set(setup, [...(graph.get(setup) ?? []), settings, provider, wire]);
      graph.set(library, [...(graph.get(library) ?? []), issuer]);
      graph.set(plugin, [...(graph.get(plugin) ?? []), issuer]);
      graph.set(cli, [...(graph.get(cli) ?? []), issuer]);
      expect(issuerViolations('from')).toEqual([
        'issuer/setup.ts -> providers/tenant-cert/settings.ts',
        'issuer/setup.ts -> plugin/provider.ts',
      ]);
      expect(issuerViolations('to').sort()).toEqual([
        'library/index.ts -> issuer/index.ts',
        'plugin/run.ts -> issuer/index.ts',
      ]);
    } finally {
      for (const [key, value] of saved) graph.set(key, value);
    }
  });

  it('detects a cycle and an upward import when there is one (the check itself can fail)', () => {
    const saved = new Map(graph);
    const a = join(src, 'base', 'errors.ts');
    const b = join(src, 'base', 'io.ts');
    try {
      graph.set(a, [...(graph.get(a) ?? []), b]);
      graph.set(b, [...(graph.get(b) ?? []), a]);
      expect(
        cycles().some((component) => component.includes('base/errors.ts') && component.includes('base/io.ts')),
      ).toBe(true);
    } finally {
      for (const [key, value] of saved) graph.set(key, value);
    }
  });
  it('src/library/ holds only the entry points package.json exports (the rest lives in the room it belongs to)', () => {
    const manifest = JSON.parse(readFileSync(join(src, '..', 'package.json'), 'utf8')) as {
      exports: Record<string, string | { default?: string }>;
    };
    const entries = Object.values(manifest.exports)
      .map((target) => (typeof target === 'string' ? target : target.default))
      .filter((target): target is string => target?.startsWith('./dist/') === true)
      .map((target) => join(src, target.slice('./dist/'.length).replace(/\.js$/, '.ts')));
    const library = files.filter((file) => room(file) === 'library');
    expect(library.filter((file) => !entries.includes(file)).map((file) => relative(src, file))).toEqual([]);
  });
});

/**
 * The workspaces beside the package (plugins/*: the Backstage module) use it as any application would: through the
 * entry points its package.json exports, never through its src/ or dist/ files; and the package itself never
 * depends on what a workspace brings (Backstage).
 */
describe('plugins/ workspaces', () => {
  const root = join(src, '..');
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, unknown>;
    dependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
  };
  const entryPoints = new Set(
    Object.keys(manifest.exports).map((key) => (key === '.' ? manifest.name : `${manifest.name}/${key.slice(2)}`)),
  );
  const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;

  /** The imports of `text` that leave its workspace other than through an entry point of the package. */
  function strayImports(text: string): string[] {
    return [...withoutComments(text).matchAll(SPECIFIER)]
      .map((match) => match[1]!)
      .filter((spec) => (spec.startsWith('.') ? spec.startsWith('../') : spec.startsWith(manifest.name)))
      .filter((spec) => !entryPoints.has(spec));
  }

  it('a workspace imports the package only through its exported entry points', () => {
    const workspaces = readdirSync(join(root, 'plugins'), { withFileTypes: true }).filter((entry) =>
      entry.isDirectory(),
    );
    expect(workspaces.length).toBeGreaterThan(0);
    const stray = workspaces.flatMap((workspace) => {
      const dir = join(root, 'plugins', workspace.name, 'src');
      return sourceFiles(dir).flatMap((file) =>
        strayImports(readFileSync(file, 'utf8')).map((spec) => `${relative(root, file)}: ${spec}`),
      );
    });
    expect(stray).toEqual([]);
  });

  it('detects an import past the entry points (the check itself can fail)', () => {
    expect(
      strayImports(
        "import { a } from 'clusterprofile-credentials/dist/fleet/fleet.js';\nimport { b } from '../../../src/fleet/index.js';\nimport { c } from './c.js';",
      ),
    ).toEqual(['clusterprofile-credentials/dist/fleet/fleet.js', '../../../src/fleet/index.js']);
  });

  it('the package depends on nothing Backstage', () => {
    const deps = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies });
    expect(deps.filter((name) => name.startsWith('@backstage/'))).toEqual([]);
  });
});
