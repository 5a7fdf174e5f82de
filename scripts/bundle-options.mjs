// How every exec-plugin binary is bundled (scripts/build.mjs), and the runtime's test fixture with it, so the
// start-up that tests and benchmarks measure is the one users get. Per binary <name>:
//   - <name>.cjs: the cache-hit path in one file — the entry and everything it imports statically — with built-ins
//     as require() and nothing else outside it; every import() in it becomes a require() of a miss chunk, or of a
//     built-in;
//   - <name>.mjs: scripts/plugin-entry.mjs, which runs <name>.cjs, and the chunks it requires, with V8 code caches
//     (bin/<name>.mjs imports it);
//   - chunks/<module>-<name>.cjs: what those import()s load (issuance, HTTP, schemas), each one CommonJS file with
//     all it imports statically but packages (jose, yaml: from node_modules), its own import()s in files of their
//     own; a miss opens two or three. The CLI is an ESM build with splitting of its own (chunks/*-<hash>.mjs).
// One file for a hit: each further module costs a start-up about 0.4 ms of resolving, reading and linking.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isBuiltin as isBuiltinModule } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ENTRY_TEMPLATE = fileURLToPath(new URL('./plugin-entry.mjs', import.meta.url));

const common = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  // Imported from node_modules, never bundled: the peer dependency (the host's own copy) and the dependencies the
  // library (dist/, built by tsc; its fleet manager runs the providers in process) needs anyway, so the package ships
  // their code once. yargs, which only the CLI uses, is bundled and a devDependency. A cache hit loads none of them.
  external: ['@kubernetes/client-node', 'undici', 'yaml', 'jose', '@peculiar/x509', 'prom-client'],
  logLevel: 'warning',
  // src/base/version.ts reads import.meta only when the build did not define the version constant, which every
  // bundle does; in the CJS hit build esbuild would warn about that dead branch.
  logOverride: { 'empty-import-meta': 'silent' },
};

/**
 * Our modules' static imports of built-ins become `process.getBuiltinModule()` in the ESM build. An ESM import of a
 * built-in builds its namespace, which runs every lazy getter of the module: `node:http`'s loads Node's own copy of
 * undici (with http2, zlib, worker_threads: ~10 ms and MiBs on an oidc miss), `node:fs`'s fs.promises and readline,
 * `node:crypto`'s WebCrypto. A destructuring reads only the names imported. Type-only imports are left to esbuild.
 */
const IMPORT_BUILTIN =
  /^import\s+(?!type\s)([\w$]+\s*,\s*)?(\*\s+as\s+[\w$]+|\{[^}]*\}|[\w$]+)\s+from\s+['"](node:[\w/]+)['"];?/gm;

function builtinImport(_statement, defaultPart, bindings, specifier) {
  const module = `process.getBuiltinModule(${JSON.stringify(specifier)})`;
  const declarations = [];
  if (defaultPart !== undefined) declarations.push(`const ${defaultPart.replace(/[\s,]/g, '')} = ${module};`);
  if (bindings.startsWith('*')) {
    declarations.push(`const ${bindings.replace(/^\*\s+as\s+/, '')} = ${module};`);
  } else if (bindings.startsWith('{')) {
    const names = bindings
      .slice(1, -1)
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '' && !part.startsWith('type '))
      .map((part) => part.replace(/\s+as\s+/, ': '));
    if (names.length > 0) declarations.push(`const { ${names.join(', ')} } = ${module};`);
  } else {
    declarations.push(`const ${bindings} = ${module};`);
  }
  return declarations.join(' ');
}

const builtinsByName = {
  name: 'builtins-by-name',
  setup(pluginBuild) {
    pluginBuild.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, (args) => ({
      contents: readFileSync(args.path, 'utf8').replace(IMPORT_BUILTIN, builtinImport),
      loader: 'ts',
    }));
  },
};

/** ESM output with code splitting: the `clusterprofile` CLI. */
export const pluginBundleOptions = {
  ...common,
  outExtension: { '.js': '.mjs' },
  chunkNames: 'chunks/[name]-[hash]',
  splitting: true,
  format: 'esm',
  // Some bundled CommonJS dependencies call require(); give ESM output a real one.
  banner: {
    js: "import { createRequire as __cpcCreateRequire } from 'node:module'; const require = __cpcCreateRequire(import.meta.url);",
  },
  plugins: [builtinsByName],
};

/**
 * What scripts/plugin-entry.mjs runs as a vm.Script: each .cjs file is one function expression of (exports, require,
 * module), written so by the build (esbuild's banner and footer), so that the entry hands V8 the file's text as read —
 * wrapping it at run time built a second copy of the text (a string concatenation V8 then flattened) on every start.
 */
const SCRIPT_WRAPPER = { banner: { js: '(function (exports, require, module) {' }, footer: { js: '})' } };

/**
 * Packages bundled into the miss chunks although the package depends on them: jose is ESM, and its 13 modules an oidc
 * miss imports were each resolved, read and compiled on every miss (Node's compile cache keeps only their top level),
 * where in the chunk they run with its V8 code cache: −9 ms of CPU and −0.6 MiB on an oidc miss, side by side. The
 * cost: the binaries run the jose the package was built with (as the plugin images already do), not one a user
 * installs later; the library (dist/) still imports the installed one.
 */
const IN_MISS_CHUNKS = new Set(['jose']);

const isBuiltin = (path) => isBuiltinModule(path);

/**
 * An esbuild plugin for the hit-path file: every `import()` of something not built in is left out of it. `lazy`
 * collects what they resolve to; `target` maps that to the import specifier written into the file.
 */
function lazyImports(lazy, target) {
  return {
    name: 'lazy-imports',
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind !== 'dynamic-import' || isBuiltin(args.path) || args.pluginData === 'lazy-imports')
          return undefined;
        const resolved = await pluginBuild.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: 'lazy-imports',
        });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        // A package (jose, yaml) stays an import() of node_modules.
        if (resolved.external === true) return undefined;
        lazy.add(resolved.path);
        return { path: target?.(resolved.path) ?? args.path, external: true };
      });
    },
  };
}

/** The file of a hit path, CommonJS for vm.Script, wrapped by scripts/plugin-entry.mjs. */
function hitOptions(name, entry, outdir, plugin, external) {
  return {
    ...common,
    external,
    entryPoints: [entry],
    outfile: join(outdir, `${name}.cjs`),
    format: 'cjs',
    ...SCRIPT_WRAPPER,
    // import() becomes require() (built-ins, and the ESM chunks through require(esm)): a vm.Script's own import()
    // would need an experimental loader option.
    supported: { 'dynamic-import': false },
    metafile: true,
    plugins: [plugin],
  };
}

/** Chunk names: a module's file name, its folder's for an index file, its parent folder's too when names clash. */
function chunkNames(files) {
  const short = (file) => {
    const base = basename(file).replace(/\.[cm]?[jt]s$/, '');
    return base === 'index' ? basename(dirname(file)) : base;
  };
  const count = new Map();
  for (const file of files) count.set(short(file), (count.get(short(file)) ?? 0) + 1);
  return Object.fromEntries(
    files.map((file) => [count.get(short(file)) > 1 ? `${basename(dirname(file))}-${short(file)}` : short(file), file]),
  );
}

/**
 * Bundles plugin binaries into `outdir`: for each `entries[name]` (a module exporting `run`), `<name>.mjs` and
 * `<name>.cjs`, plus the miss chunks under `outdir/chunks`. `esmEntries` (the CLI) are one split ESM build:
 * `<name>.mjs` re-exports `chunks/<name>-<hash>.mjs`. `external`: what stays an import of node_modules (default: the
 * package's dependencies; `[]` bundles everything, as a plugin image needs). Returns the source files bundled.
 *
 * @param {{ entries: Record<string, string>, esmEntries?: Record<string, string>, outdir: string, sourcemap?: boolean | 'linked', define?: Record<string, string>, external?: string[] }} options
 */
export async function bundlePlugins({
  entries,
  esmEntries = {},
  outdir,
  sourcemap = false,
  define = {},
  external = common.external,
}) {
  /** Every source file that went into a written output. */
  const inputs = new Set();
  const record = (result) => {
    for (const input of Object.keys(result.metafile?.inputs ?? {})) inputs.add(input);
    return result;
  };
  mkdirSync(outdir, { recursive: true });
  const absoluteWorkingDir = process.cwd();
  const chunks = new Set();
  /** A specifier function for the chunks of one build: entry file -> `./chunks/<name>-<hash>.mjs`. */
  const specifiers = (metafile) => {
    const chunkOf = new Map();
    for (const [output, meta] of Object.entries(metafile.outputs)) {
      if (meta.entryPoint !== undefined) chunkOf.set(meta.entryPoint, output);
    }
    return (file) => {
      const output = chunkOf.get(relative(absoluteWorkingDir, resolve(file)).split('\\').join('/'));
      if (output === undefined) throw new Error(`bundlePlugins: no chunk was built for ${file}`);
      const path = `./${relative(outdir, join(absoluteWorkingDir, output)).split('\\').join('/')}`;
      chunks.add(path);
      return path;
    };
  };
  const splitBuild = (entryPoints) =>
    build({
      ...pluginBundleOptions,
      external,
      entryPoints,
      entryNames: 'chunks/[name]-[hash]',
      outdir,
      metafile: true,
      sourcemap,
      define,
    }).then(record);
  // The miss chunks of binary `name`: each module its hit path import()s, and each module those import() in turn,
  // bundled into one CommonJS file (chunks/<module>-<name>.cjs, no splitting: what two share is in both) with its
  // static imports; its import()s of our modules point to their own files, so what a run does not need is not read.
  // The entry runs them like the hit path, with a code cache made after a run.
  const missOptions = {
    ...common,
    external: external.filter((name) => !IN_MISS_CHUNKS.has(name)),
    format: 'cjs',
    ...SCRIPT_WRAPPER,
    supported: { 'dynamic-import': false },
    sourcemap,
    define,
  };
  const missBuild = async (name, entryPoints) => {
    const all = new Set(Object.values(entryPoints).map((file) => resolve(file)));
    for (const queue = [...all]; queue.length > 0; ) {
      const nested = new Set();
      await build({
        ...missOptions,
        entryPoints: [queue.shift()],
        outdir,
        write: false,
        plugins: [lazyImports(nested)],
      });
      for (const file of nested) {
        if (!all.has(file)) {
          all.add(file);
          queue.push(file);
        }
      }
    }
    const names = chunkNames([...all].sort());
    const fileName = new Map(Object.entries(names).map(([chunk, file]) => [resolve(file), `${chunk}-${name}.cjs`]));
    const output = (file) => {
      const chunk = fileName.get(resolve(file));
      if (chunk === undefined) throw new Error(`bundlePlugins: no miss chunk for ${file}`);
      return chunk;
    };
    for (const [chunk, file] of Object.entries(names)) {
      record(
        await build({
          ...missOptions,
          metafile: true,
          entryPoints: [file],
          outfile: join(outdir, 'chunks', `${chunk}-${name}.cjs`),
          plugins: [lazyImports(new Set(), (path) => `./${output(path)}`)],
        }),
      );
    }
    return (file) => {
      const path = `./chunks/${output(file)}`;
      chunks.add(path);
      return path;
    };
  };
  // 1. The ESM entries (the CLI), one split build.
  if (Object.keys(esmEntries).length > 0) {
    const specifier = specifiers((await splitBuild(esmEntries)).metafile);
    for (const [name, entry] of Object.entries(esmEntries)) {
      writeFileSync(join(outdir, `${name}.mjs`), `export * from '${specifier(entry)}';\n`);
    }
  }
  for (const [name, entry] of Object.entries(entries)) {
    // 2. What this binary's hit path import()s (found by a build written nowhere), as its miss chunks: each chunk
    // file is a module to resolve, read and compile, so a miss should open few; split ESM chunks opened 4-14.
    const lazy = new Set();
    await build({ ...hitOptions(name, entry, outdir, lazyImports(lazy), external), define, write: false });
    const names = chunkNames([...lazy].sort());
    const specifier =
      lazy.size === 0
        ? () => {
            throw new Error('bundlePlugins: no lazy imports');
          }
        : await missBuild(name, names);
    // 3. The hit path, its import()s pointing to those chunks; then the entry next to it.
    const result = record(
      await build({
        ...hitOptions(name, entry, outdir, lazyImports(new Set(), specifier), external),
        define,
        sourcemap,
      }),
    );
    const foreign = Object.values(result.metafile.outputs)
      .flatMap((output) => output.imports)
      .filter((imported) => !isBuiltin(imported.path) && !chunks.has(imported.path));
    if (foreign.length > 0) {
      throw new Error(
        `bundlePlugins: ${name}.cjs requires ${foreign.map((imported) => imported.path).join(', ')}: only built-ins and the miss chunks may stay outside it`,
      );
    }
    copyFileSync(ENTRY_TEMPLATE, join(outdir, `${name}.mjs`));
  }
  return { inputs: [...inputs].sort() };
}
