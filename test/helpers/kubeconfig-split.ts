/**
 * A kubeconfig split over two files the way only a real kubectl-style merge reads correctly, for `KUBECONFIG=a:b`:
 *
 * - `a/config` holds `current-context: hub` and the context `hub` (cluster `hub`, user `reader`, the namespace) —
 *   no cluster, no user;
 * - `b/config` holds the cluster `hub` and the user `reader`, whose token is in `tokens/reader` relative to b's
 *   directory (so relative paths must resolve against the file that holds them), plus decoys that win under any other
 *   rule: its own `current-context: decoy`, a second context `hub` (pointing at the decoys) and a cluster `decoy` on a
 *   closed port with a wrong token.
 *
 * Reading only a finds no cluster; reading only b, or letting the last file win, picks the decoy.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { stringify } from 'yaml';

export interface SplitKubeconfig {
  /** The value for KUBECONFIG: `<a>:<b>` (path.delimiter). */
  KUBECONFIG: string;
  a: string;
  b: string;
}

export async function writeSplitKubeconfig(
  dir: string,
  options: { server: string; caBase64: string; token: string; namespace?: string },
): Promise<SplitKubeconfig> {
  const a = join(dir, 'a', 'config');
  const b = join(dir, 'b', 'config');
  await mkdir(join(dir, 'a'), { recursive: true });
  await mkdir(join(dir, 'b', 'tokens'), { recursive: true });
  await writeFile(join(dir, 'b', 'tokens', 'reader'), `${options.token}\n`, { mode: 0o600 });
  await writeFile(
    a,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'hub',
      contexts: [
        {
          name: 'hub',
          context: {
            cluster: 'hub',
            user: 'reader',
            ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
          },
        },
      ],
    }),
    { mode: 0o600 },
  );
  await writeFile(
    b,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'decoy',
      clusters: [
        { name: 'decoy', cluster: { server: 'https://127.0.0.1:1', 'certificate-authority-data': options.caBase64 } },
        { name: 'hub', cluster: { server: options.server, 'certificate-authority-data': options.caBase64 } },
      ],
      users: [
        { name: 'decoy', user: { token: 'decoy-token' } },
        { name: 'reader', user: { tokenFile: join('tokens', 'reader') } },
      ],
      contexts: [
        { name: 'decoy', context: { cluster: 'decoy', user: 'decoy', namespace: 'decoy' } },
        { name: 'hub', context: { cluster: 'decoy', user: 'decoy', namespace: 'decoy' } },
      ],
    }),
    { mode: 0o600 },
  );
  return { KUBECONFIG: [a, b].join(delimiter), a, b };
}
