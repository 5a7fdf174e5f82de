// The entry of a plugin binary: the build copies this file to dist/bin/<name>.mjs, next to <name>.cjs, the bundled
// cache-hit path (runtime, settings, cache: everything a run loads before a miss `import()`s the rest). bin/<name>.mjs
// imports it and calls `run(argv, env, io)`.
//
// It runs <name>.cjs — and on a miss the chunks/*.cjs it requires — as vm.Scripts, each with a V8 code cache made
// AFTER a whole run. Node's compile cache (turned on by
// the bin stub) keeps what V8 compiled when the module was parsed: the top level, not the functions a run calls,
// which are then compiled again on every start — about a third of what a cache hit costs on top of `node -e 0`.
//
// The code cache is kept beside Node's own, in module.getCompileCacheDir() (NODE_COMPILE_CACHE, else
// <tmpdir>/node-compile-cache, per Node version; none when the compile cache is off), named after the payload's size,
// mtime and inode, and only read or written when that directory is the user's and writable by nobody else. V8 rejects
// a cache of another V8, other flags or another source length; a missing or rejected one is written after the run,
// atomically. Without a cache directory the scripts are compiled as any module would be.
const { closeSync, fstatSync, lstatSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } =
  process.getBuiltinModule('node:fs');
const { createRequire, getCompileCacheDir, isBuiltin } = process.getBuiltinModule('node:module');
const { basename, join } = process.getBuiltinModule('node:path');
const { fileURLToPath } = process.getBuiltinModule('node:url');
const { Script } = process.getBuiltinModule('node:vm');

// Resolved (not just computed) so that module hooks see the payload like any other module of the binary.
const file = fileURLToPath(import.meta.resolve(`./${basename(fileURLToPath(import.meta.url), '.mjs')}.cjs`));
const cacheDir = privateCacheDir();

/** Node's compile cache directory, when there is one and it is the user's own, writable by nobody else. */
function privateCacheDir() {
  const dir = getCompileCacheDir?.();
  if (dir === undefined) return undefined;
  try {
    const info = lstatSync(dir);
    if (!info.isDirectory() || info.uid !== process.getuid?.() || (info.mode & 0o022) !== 0) return undefined;
  } catch {
    return undefined;
  }
  return dir;
}

/** Every script run so far (the payload, then the miss chunks it requires), for the code caches written after the run. */
const scripts = [];

/**
 * Runs a CommonJS file as a vm.Script with its V8 code cache (named after the file's size, mtime and inode) and returns
 * its exports. Its require() gives built-ins, the miss chunks (`./chunks/*.cjs`, run the same way) and packages.
 */
function runScript(path) {
  const fd = openSync(path, 'r');
  let source;
  let stats;
  try {
    stats = fstatSync(fd);
    source = readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
  const cache =
    cacheDir === undefined
      ? undefined
      : join(cacheDir, `${basename(path, '.cjs')}-${stats.size}-${Math.trunc(stats.mtimeMs)}-${stats.ino}.v8`);
  let cachedData;
  if (cache !== undefined) {
    try {
      cachedData = readFileSync(cache);
    } catch {
      // none yet
    }
  }
  // The build wrote the file as one function expression of (exports, require, module) (scripts/bundle-options.mjs):
  // the text goes to V8 as read, no second copy of it made here.
  const script = new Script(source, { filename: path, ...(cachedData === undefined ? {} : { cachedData }) });
  scripts.push({ script, cache, cachedData });
  let requirePackage;
  const require = (id) => {
    if (isBuiltin(id)) return process.getBuiltinModule(id);
    requirePackage ??= createRequire(path);
    // A miss chunk (./chunks/*.cjs from the payload, ./*.cjs from a chunk): resolved by Node (module hooks see
    // it), then run here with its own code cache.
    if (id.startsWith('./') && id.endsWith('.cjs')) return requireChunk(requirePackage.resolve(id));
    return requirePackage(id);
  };
  const module = { exports: {} };
  script.runInThisContext()(module.exports, require, module);
  return module.exports;
}

const chunks = new Map();
function requireChunk(path) {
  if (!chunks.has(path)) chunks.set(path, runScript(path));
  return chunks.get(path);
}

const payload = runScript(file);

/** Writes the code cache of every script that had none (or a rejected one): after a run, so it holds what the run compiled. */
function writeCodeCaches() {
  for (const { script, cache, cachedData } of scripts) {
    if (cache === undefined || (cachedData !== undefined && script.cachedDataRejected !== true)) continue;
    const temporary = `${cache}.${process.pid}.tmp`;
    try {
      writeFileSync(temporary, script.createCachedData(), { mode: 0o600, flag: 'wx' });
      renameSync(temporary, cache);
    } catch {
      // An optimisation only: the next run tries again.
      rmSync(temporary, { force: true });
    }
  }
}

/** @type {(argv: string[], env: Record<string, string | undefined>, io: NodeJS.Process) => Promise<number>} */
export async function run(argv, env, io) {
  try {
    return await payload.run(argv, env, io);
  } finally {
    writeCodeCaches();
  }
}
