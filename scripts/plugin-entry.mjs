// The entry of a plugin binary: the build copies this file to dist/bin/<name>.mjs, next to <name>.cjs, the bundled
// cache-hit path (runtime, settings, cache: everything a run loads before a miss `import()`s the rest). bin/<name>.mjs
// imports it and calls `run(argv, env, io)`.
//
// It runs <name>.cjs as a vm.Script with a V8 code cache made AFTER a whole run. Node's compile cache (turned on by
// the bin stub) keeps what V8 compiled when the module was parsed: the top level, not the functions a run calls,
// which are then compiled again on every start — about a third of what a cache hit costs on top of `node -e 0`.
//
// The code cache is kept beside Node's own, in module.getCompileCacheDir() (NODE_COMPILE_CACHE, else
// <tmpdir>/node-compile-cache, per Node version; none when the compile cache is off), named after the payload's size,
// mtime and inode, and only read or written when that directory is the user's and writable by nobody else. V8 rejects
// a cache of another V8, other flags or another source length; a missing or rejected one is written after the run,
// atomically. Without a cache directory the payload is compiled as any module would be.
const { closeSync, fstatSync, lstatSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } = process.getBuiltinModule('node:fs');
const { createRequire, getCompileCacheDir, isBuiltin } = process.getBuiltinModule('node:module');
const { basename, join } = process.getBuiltinModule('node:path');
const { fileURLToPath } = process.getBuiltinModule('node:url');
const { Script } = process.getBuiltinModule('node:vm');

// Resolved (not just computed) so that module hooks see the payload like any other module of the binary.
const file = fileURLToPath(import.meta.resolve(`./${basename(fileURLToPath(import.meta.url), '.mjs')}.cjs`));
const fd = openSync(file, 'r');
let source;
let stats;
try {
  stats = fstatSync(fd);
  source = readFileSync(fd, 'utf8');
} finally {
  closeSync(fd);
}

/** The code cache file, when there is a private cache directory. */
function cacheFile() {
  const dir = getCompileCacheDir?.();
  if (dir === undefined) return undefined;
  try {
    const info = lstatSync(dir);
    if (!info.isDirectory() || info.uid !== process.getuid?.() || (info.mode & 0o022) !== 0) return undefined;
  } catch {
    return undefined;
  }
  return join(dir, `${basename(file, '.cjs')}-${stats.size}-${Math.trunc(stats.mtimeMs)}-${stats.ino}.v8`);
}

const cache = cacheFile();
let cachedData;
if (cache !== undefined) {
  try {
    cachedData = readFileSync(cache);
  } catch {
    // none yet
  }
}
// The wrapper keeps line numbers.
const script = new Script(`(function (exports, require, module) {${source}\n})`, { filename: file, ...(cachedData === undefined ? {} : { cachedData }) });
const payload = { exports: {} };
// The payload requires built-ins, and on a miss the chunks its import()s became (ESM, through require(esm)); the
// build checks that there is nothing else.
let requireChunk;
const require = (id) => (isBuiltin(id) ? process.getBuiltinModule(id) : (requireChunk ??= createRequire(file))(id));
script.runInThisContext()(payload.exports, require, payload);

/** @type {(argv: string[], env: Record<string, string | undefined>, io: NodeJS.Process) => Promise<number>} */
export async function run(argv, env, io) {
  try {
    return await payload.exports.run(argv, env, io);
  } finally {
    if (cache !== undefined && (cachedData === undefined || script.cachedDataRejected === true)) {
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
}
