// How every exec-plugin binary is bundled (scripts/build.mjs), and the runtime's test fixture with it, so the
// start-up that tests and benchmarks measure is the one users get: one ESM file per entry, its dynamic imports split
// into chunks (a cache hit loads none of the network code), the compile cache turned on by the bin stub.
export const pluginBundleOptions = {
  outExtension: { '.js': '.mjs' },
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  // Imported from node_modules, never bundled: the peer dependency (the host's own copy) and the dependencies the
  // library (dist/, built by tsc) needs anyway, so the package ships their code once. The other libraries the binaries
  // use (jose, @peculiar/x509, yargs) are bundled and are devDependencies. A cache hit loads none of them.
  external: ['@kubernetes/client-node', 'undici', 'yaml'],
  // Some bundled CommonJS dependencies call require(); give ESM output a real one.
  banner: { js: "import { createRequire as __cpcCreateRequire } from 'node:module'; const require = __cpcCreateRequire(import.meta.url);" },
  logLevel: 'warning',
};
