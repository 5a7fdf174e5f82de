/**
 * The oldest Node.js the package runs on: package.json `engines`, which is undici's floor. undici is what the
 * library's client-node connections go through (src/client-node/build-config.ts), not the plugins: their HTTP seam
 * (src/base/http.ts) is node:net and node:tls. On an older Node something would fail late, far from its cause (undici
 * on the library's first connection), so every entry point checks first, before it loads anything else: the bin stubs
 * import ./node-floor-exit.js on their first line, the library's entries import ./node-floor-throw.js first. This
 * module has no imports at run time.
 */
import type { ErrorCode } from './error-registry.js';

/** The oldest supported Node.js version. */
export const NODE_FLOOR = '22.19.0';

/** The code of the failure. */
export const NODE_FLOOR_CODE = 'ERR_NODE_VERSION' satisfies ErrorCode;

/**
 * Why this Node.js is too old, in one line naming the version found (and where it runs from) and the one needed;
 * undefined when it is new enough.
 *
 * @example
 * ```ts
 * nodeFloorProblem('20.20.2', '/usr/bin/node');
 * // 'Node.js 20.20.2 (/usr/bin/node) is too old: clusterprofile-credentials needs Node.js 22.19.0 or newer'
 * ```
 */
export function nodeFloorProblem(
  version: string = process.versions.node,
  execPath: string = process.execPath,
): string | undefined {
  const found = version.replace(/^v/, '').split('.').map(Number);
  const needed = NODE_FLOOR.split('.').map(Number);
  for (let i = 0; i < needed.length; i += 1) {
    const have = found[i] ?? 0;
    const need = needed[i] ?? 0;
    if (have > need) return undefined;
    if (have < need) {
      return `Node.js ${version} (${execPath}) is too old: clusterprofile-credentials needs Node.js ${NODE_FLOOR} or newer`;
    }
  }
  return undefined;
}
