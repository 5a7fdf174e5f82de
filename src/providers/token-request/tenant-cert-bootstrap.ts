/**
 * The tenant-cert identity as the bootstrap credential for TokenRequest: the tenant-cert provider obtained in-process
 * through the same runtime as its own binary — the same cache entry under `$KUBECACHEDIR/clusterprofile/tenant-cert`,
 * the same lock (and the provider's lock patience), the same checks — for the same `spec.cluster`. The certificate is
 * shared with a standalone `clusterprofile-tenant-cert` for that cluster, renewed by the same rules, and never issued
 * twice when both run at once.
 */
import { CredentialsError, isCredentialsError } from '../../core/errors.js';
import type { ExecCluster } from '../../core/exec-credential.js';
import type { KubeCredential } from '../../kube/types.js';
import { obtainCredential } from '../../plugin/obtain.js';
import type { IssueContext } from '../../plugin/provider.js';
import { tenantCertProvider } from '../tenant-cert/index.js';
import type { Bootstrap } from './settings.js';

export async function tenantCertCredential(
  bootstrap: Extract<Bootstrap, { kind: 'tenant-cert' }>,
  cluster: ExecCluster,
  context: IssueContext,
): Promise<KubeCredential> {
  let status;
  try {
    ({ status } = await obtainCredential(tenantCertProvider, {
      input: { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false, cluster } },
      flags: { 'cluster-id': bootstrap.clusterId, 'key-file': bootstrap.keyFile },
      env: context.env,
      now: context.now,
      signal: context.signal,
      stderr: context.stderr,
    }));
  } catch (error) {
    // An interruption or a bug is not the bootstrap's to explain.
    if (context.signal.aborted || !isCredentialsError(error)) throw error;
    const where = error.path === undefined ? '' : ` (at ${error.path})`;
    throw new CredentialsError('ERR_TOKEN_REQUEST_BOOTSTRAP', `the tenant-cert bootstrap identity could not be obtained: ${error.code}: ${error.message}${where}`, {
      path: '--bootstrap tenant-cert',
      ...(error.hint === undefined ? {} : { hint: error.hint }),
      cause: error,
    });
  }
  if (status.clientCertificateData === undefined || status.clientKeyData === undefined) {
    throw new CredentialsError('ERR_TOKEN_REQUEST_BOOTSTRAP', 'the tenant-cert bootstrap returned no client certificate', { path: '--bootstrap tenant-cert' });
  }
  return { kind: 'certificate', certificatePem: status.clientCertificateData, keyPem: status.clientKeyData };
}
