/**
 * The tenant-cert identity as the bootstrap credential for TokenRequest: the tenant-cert provider obtained in-process
 * through the same runtime as its own binary — the same cache entry under `$KUBECACHEDIR/clusterprofile/tenant-cert`,
 * the same lock (and the provider's lock patience), the same checks — for the same `spec.cluster`. The certificate is
 * shared with a standalone `clusterprofile-tenant-cert` for that cluster, renewed by the same rules, and never issued
 * twice when both run at once.
 */
import { join } from 'node:path';
import { CredentialsError, isCredentialsError } from '../../base/errors.js';
import { homeDirectory, type Env } from '../../base/io.js';
import type { ExecCluster } from '../../base/exec-credential.js';
import type { KubeCredential } from '../../kube/types.js';
import { cacheDirectory } from '../../plugin/cache.js';
import { obtainCredential } from '../../plugin/obtain.js';
import type { IssueContext } from '../../plugin/provider.js';
import { tenantCertProvider } from '../tenant-cert/index.js';
import type { Bootstrap } from './settings.js';

/**
 * The directories the tenant-cert bootstrap uses, resolved as the plugins resolve theirs when HOME is unset (a pod):
 * the flag, else the environment, else the user's home directory from the user database — else a usage error
 * naming what sets it. HOME set: undefined, tenant-cert's own default (so the standalone plugin shares the entry).
 */
function bootstrapDirectories(
  bootstrap: Extract<Bootstrap, { kind: 'tenant-cert' }>,
  env: Env,
  home: () => string,
): { identityDir?: string } {
  const homeEnv = env['HOME'] ?? env['USERPROFILE'];
  let identityDir = bootstrap.identityDir;
  if (identityDir === undefined && (homeEnv === undefined || homeEnv === '')) {
    try {
      identityDir = join(home(), '.kube', 'clusterprofile', 'identities');
    } catch {
      throw new CredentialsError(
        'ERR_TOKEN_REQUEST_USAGE',
        '--bootstrap tenant-cert: no --identity-dir given, HOME is not set and the user has no home directory',
        {
          path: '--identity-dir',
          hint: 'give --identity-dir DIR (where clusterprofile identity import stored Identities; any directory when spec.cluster.config names the issuer) or set HOME',
        },
      );
    }
  }
  try {
    // The bootstrap's certificate is cached as the standalone tenant-cert plugin caches it; --cache-dir is the token's.
    cacheDirectory('tenant-cert', undefined, env, home);
  } catch {
    throw new CredentialsError(
      'ERR_TOKEN_REQUEST_USAGE',
      '--bootstrap tenant-cert: no cache directory for the tenant-cert certificate: KUBECACHEDIR is not set and there is no home directory',
      {
        path: 'KUBECACHEDIR',
        hint: 'set KUBECACHEDIR (the certificate goes to $KUBECACHEDIR/clusterprofile/tenant-cert; --cache-dir is where the token goes) or HOME; in a pod, a writable emptyDir',
      },
    );
  }
  return identityDir === undefined ? {} : { identityDir };
}

export async function tenantCertCredential(
  bootstrap: Extract<Bootstrap, { kind: 'tenant-cert' }>,
  cluster: ExecCluster,
  context: IssueContext,
  home: () => string = homeDirectory,
): Promise<KubeCredential> {
  const { identityDir } = bootstrapDirectories(bootstrap, context.env, home);
  let status: Awaited<ReturnType<typeof obtainCredential>>['status'];
  try {
    ({ status } = await obtainCredential(tenantCertProvider, {
      input: {
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        spec: { interactive: false, cluster },
      },
      flags: {
        'cluster-id': bootstrap.clusterId,
        'key-file': bootstrap.keyFile,
        ...(identityDir === undefined ? {} : { 'identity-dir': identityDir }),
      },
      env: context.env,
      now: context.now,
      signal: context.signal,
      stderr: context.stderr,
    }));
  } catch (error) {
    // An interruption or a bug is not the bootstrap's to explain.
    if (context.signal.aborted || !isCredentialsError(error)) throw error;
    const where = error.path === undefined ? '' : ` (at ${error.path})`;
    throw new CredentialsError(
      'ERR_TOKEN_REQUEST_BOOTSTRAP',
      `the tenant-cert bootstrap identity could not be obtained: ${error.code}: ${error.message}${where}`,
      {
        path: '--bootstrap tenant-cert',
        ...(error.hint === undefined ? {} : { hint: error.hint }),
        cause: error,
      },
    );
  }
  if (status.clientCertificateData === undefined || status.clientKeyData === undefined) {
    throw new CredentialsError(
      'ERR_TOKEN_REQUEST_BOOTSTRAP',
      'the tenant-cert bootstrap returned no client certificate',
      { path: '--bootstrap tenant-cert' },
    );
  }
  return { kind: 'certificate', certificatePem: status.clientCertificateData, keyPem: status.clientKeyData };
}
