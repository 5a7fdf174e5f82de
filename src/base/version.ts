/**
 * The package's version, for `--version` on every binary. The binaries' bundles get it as a constant at build time
 * (esbuild `define` in scripts/build.mjs), so a plugin start reads no package.json; code compiled by tsc (the
 * library's dist/, tests run from source) reads package.json when asked: it is two levels up from both src/base/ and
 * dist/base/.
 */
declare const CLUSTERPROFILE_CREDENTIALS_VERSION: string | undefined;

/** The version of clusterprofile-credentials, e.g. `0.1.0`. */
export function packageVersion(): string {
  if (typeof CLUSTERPROFILE_CREDENTIALS_VERSION === 'string') return CLUSTERPROFILE_CREDENTIALS_VERSION;
  const require = process.getBuiltinModule('node:module').createRequire(import.meta.url);
  return (require('../../package.json') as { version: string }).version;
}
