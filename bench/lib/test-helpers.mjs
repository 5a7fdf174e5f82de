/**
 * The test helpers a benchmark reuses (the e2e control plane, the test OpenID Provider, the fake API server) are
 * TypeScript: each is bundled next to the project's node_modules (so the packages left external resolve from the
 * project), with @peculiar/x509 inside so the Reflect shim it needs runs first, then imported.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/**
 * Bundles `contents` (a TypeScript module resolved from `root`) into
 * node_modules/.cache/clusterprofile-bench/<name>.mjs and imports it.
 */
export async function importTestHelpers(root, name, contents, external) {
  const outfile = join(root, `node_modules/.cache/clusterprofile-bench/${name}.mjs`);
  await build({
    stdin: { contents, resolveDir: root, loader: 'ts' },
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    external,
    banner: {
      js: "import { createRequire as __cpcCreateRequire } from 'node:module'; const require = __cpcCreateRequire(import.meta.url);",
    },
    absWorkingDir: root,
    logLevel: 'warning',
  });
  return import(pathToFileURL(outfile).href);
}

/** `startControlPlane` of test/helpers/controlplane.ts (etcd, kube-apiserver, kube-controller-manager from Go modules). */
export async function loadStartControlPlane(root, name) {
  const helpers = await importTestHelpers(
    root,
    `${name}-helpers`,
    "import './src/base/reflect-shim.ts'; export { startControlPlane } from './test/helpers/controlplane.ts';",
    ['undici', 'yaml', 'jose'],
  );
  return helpers.startControlPlane;
}
