// Builds the package: optional generation steps, the library with tsc (dist/, with .d.ts), and the binaries with
// esbuild (dist/bin/): each plugin's cache-hit path as one file, what a miss import()s in chunks
// (scripts/bundle-options.mjs), and the `clusterprofile` CLI as an ESM bundle whose commands are chunks.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundlePlugins } from './bundle-options.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);

/** Every binary of the package: its bin/<name>.mjs stub imports dist/bin/<name>.mjs and calls its `run`. */
export const binaries = [
  { name: 'clusterprofile', entry: 'src/cli/main.ts' },
  { name: 'clusterprofile-tenant-cert', entry: 'src/providers/tenant-cert/main.ts' },
  { name: 'clusterprofile-token-request', entry: 'src/providers/token-request/main.ts' },
  { name: 'clusterprofile-oidc', entry: 'src/providers/oidc/main.ts' },
];

function run(command, args) {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0) {
    process.exit(result.status ?? 1);
  }
}

// Generation steps that later ones depend on (e.g. precompiled schema validators).
if (existsSync('scripts/compile-schemas.mjs')) {
  run(process.execPath, ['scripts/compile-schemas.mjs']);
}

// Build into a fresh directory and swap it in with renames: `dist` is never half-written, so tests and binaries
// started while another build runs (several engineers, one tree) keep working.
const out = `dist.build-${process.pid}`;
rmSync(out, { recursive: true, force: true });
run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--outDir', out]);

const present = binaries.filter((binary) => existsSync(binary.entry));
const [cli, ...plugins] = present;
await bundlePlugins({
  entries: Object.fromEntries(plugins.map((binary) => [binary.name, binary.entry])),
  esmEntries: { [cli.name]: cli.entry },
  outdir: `${out}/bin`,
  // No source maps: the bundles are not minified (a stack trace reads as it is), and maps would carry every bundled
  // library's sources again (the library's own maps, from tsc, embed their TypeScript).
  sourcemap: false,
  // --version of every binary (src/base/version.ts): a constant, so no start reads package.json.
  define: {
    CLUSTERPROFILE_CREDENTIALS_VERSION: JSON.stringify(JSON.parse(readFileSync('package.json', 'utf8')).version),
  },
});

// Swap, then remove what was swapped out. Keeping the previous build would not help a binary that is still running:
// its modules import their chunks by their dist/ path, which now names the new build.
const previous = `dist.old-${process.pid}`;
for (let attempt = 0; ; attempt += 1) {
  try {
    renameSync('dist', `${previous}-${attempt}`);
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
  }
  try {
    renameSync(out, 'dist');
    break;
  } catch (error) {
    // Another build swapped its own output in between: move it aside too and try again.
    if ((error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') || attempt > 20) throw error;
  }
}
// Every swapped-out build goes (also those an interrupted build left); an unfinished `dist.build-*` only when it is
// old enough that no build can still be writing it.
for (const name of readdirSync('.')) {
  const stale =
    /^dist\.old-[\d-]+$/.test(name) ||
    (/^dist\.build-\d+$/.test(name) && name !== out && Date.now() - statSync(name).mtimeMs > 5 * 60_000);
  if (stale) rmSync(name, { recursive: true, force: true });
}

// The workspaces (plugins/*: the Backstage module) import the package's public entry points from the dist/ above.
for (const workspace of JSON.parse(readFileSync('package.json', 'utf8')).workspaces ?? []) {
  for (const dir of readdirSync(workspace.replace(/\/\*$/, ''), { withFileTypes: true })) {
    const tsconfig = `${dir.parentPath}/${dir.name}/tsconfig.json`;
    if (dir.isDirectory() && existsSync(tsconfig)) {
      run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', tsconfig]);
    }
  }
}
