/**
 * The e2e layer's control plane (etcd, kube-apiserver, kube-controller-manager built from Go modules) for a benchmark.
 * Its helper is TypeScript: it is bundled next to node_modules (so packages resolve), with @peculiar/x509 inside so
 * the Reflect shim it needs runs first.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/** `startControlPlane` of test/helpers/controlplane.ts, loaded from the checkout at `root`. */
export async function loadStartControlPlane(root, name) {
  const helpers = join(root, `node_modules/.cache/clusterprofile-bench/${name}-helpers.mjs`);
  await build({
    stdin: {
      contents: "import './src/core/reflect-shim.ts'; export { startControlPlane } from './test/helpers/controlplane.ts';",
      resolveDir: root,
      loader: 'ts',
    },
    outfile: helpers,
    bundle: true,
    platform: 'node',
    format: 'esm',
    external: ['undici', 'yaml', 'jose'],
    banner: { js: "import { createRequire as __cpcCreateRequire } from 'node:module'; const require = __cpcCreateRequire(import.meta.url);" },
    absWorkingDir: root,
    logLevel: 'warning',
  });
  return (await import(pathToFileURL(helpers).href)).startControlPlane;
}
