/**
 * A ClusterProfile's additional-envs extension must not run code in our plugins: `NODE_OPTIONS=--import=data:...`
 * would execute the profile author's JavaScript inside `clusterprofile-oidc` (a real child process here) with the
 * controller's privileges and credentials. Resolution refuses it; only the operator's providers file can allow it,
 * and then the code really runs — which is why it is refused by default.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCredentialsError } from '../../src/base/errors.js';
import { runExecPlugin } from '../../src/exec/runner.js';
import { resolveClusterAccess } from '../../src/resolve/cluster-access.js';
import type { AccessConfig, ProviderConfig } from '../../src/resolve/types.js';
import { ENVS_EXT, profile } from '../helpers/library-fixtures.js';

const PLUGIN = join(import.meta.dirname, '../../bin/clusterprofile-oidc.mjs');

function setup(extra: Partial<ProviderConfig> = {}) {
  const marker = join(mkdtempSync(join(tmpdir(), 'cpc-takeover-')), 'marker');
  const code = `import('node:fs').then((fs) => fs.writeFileSync(${JSON.stringify(marker)}, 'ran in ' + process.argv[1]))`;
  const attack = profile({
    accessProviders: [
      {
        name: 'oidc',
        cluster: {
          server: 'https://member.example:6443',
          extensions: [
            {
              name: ENVS_EXT,
              extension: {
                NODE_OPTIONS: `--import=data:text/javascript;base64,${Buffer.from(code).toString('base64')}`,
              },
            },
          ],
        },
      },
    ],
  });
  const accessConfig: AccessConfig = {
    providers: [
      {
        name: 'oidc',
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: [PLUGIN],
          provideClusterInfo: true,
        },
        profileSourcedEnvVarsPolicy: 'AppendIfNotExists',
        ...extra,
      },
    ],
  };
  return { marker, attack, accessConfig };
}

describe('NODE_OPTIONS from a ClusterProfile', () => {
  it('is refused by resolution (ERR_PROFILE_ENV_DENIED): no plugin runs, no code runs', () => {
    const { marker, attack, accessConfig } = setup();
    let caught: unknown;
    try {
      const access = resolveClusterAccess(attack, accessConfig);
      // Old behaviour: the env reached the plugin. Run it, so a regression shows as the marker below too.
      void runExecPlugin(access.exec, access.cluster, { env: { PATH: process.env['PATH'] }, timeoutMs: 20_000 }).catch(
        () => undefined,
      );
    } catch (error) {
      caught = error;
    }
    expect(isCredentialsError(caught) && caught.code).toBe('ERR_PROFILE_ENV_DENIED');
    expect(isCredentialsError(caught) && caught.path).toBe(
      '$.status.accessProviders[0].cluster.extensions[0].extension.NODE_OPTIONS',
    );
    expect(existsSync(marker)).toBe(false);
  });

  it('runs the code inside our plugin process once the operator allows it (the hole is real)', async () => {
    const { marker, attack, accessConfig } = setup({ allowedProfileEnvVars: ['NODE_OPTIONS'] });
    const access = resolveClusterAccess(attack, accessConfig);
    // The plugin itself fails (no OIDC config): the injected module ran before it.
    await expect(
      runExecPlugin(access.exec, access.cluster, { env: { PATH: process.env['PATH'] }, timeoutMs: 20_000 }),
    ).rejects.toMatchObject({
      code: 'ERR_EXEC_FAILED',
    });
    expect(readFileSync(marker, 'utf8')).toBe(`ran in ${PLUGIN}`);
  });
});
