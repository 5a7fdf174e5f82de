// `npm run fuzz`: bundles test/fuzz/main.ts (the differential fuzz targets, TypeScript) with esbuild into a file under
// the checkout's git-ignored .cache/ (so packages resolve from its node_modules), and runs it with the arguments
// given. See test/fuzz/main.ts for the flags.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
await mkdir(path.join(root, '.cache'), { recursive: true });
const dir = await mkdtemp(path.join(root, '.cache', 'fuzz-bundle-'));
try {
  const outfile = path.join(dir, 'fuzz.mjs');
  await build({
    entryPoints: [path.join(root, 'test/fuzz/main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    packages: 'external',
    outfile,
    logLevel: 'warning',
    // Modules that load a package lazily with require() (src/base/document.ts's yaml) need one in an ES module.
    banner: {
      js: "import { createRequire as cpcCreateRequire } from 'node:module'; const require = cpcCreateRequire(import.meta.url);",
    },
    // The bundle lives elsewhere: keep import.meta paths those of the sources.
    define: { 'import.meta.dirname': JSON.stringify(path.join(root, 'test/fuzz')) },
  });
  const { main } = await import(pathToFileURL(outfile).href);
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`fuzz: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 2;
} finally {
  await rm(dir, { recursive: true, force: true });
}
