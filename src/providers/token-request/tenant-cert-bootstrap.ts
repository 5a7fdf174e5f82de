/**
 * The tenant-cert identity as the bootstrap credential for TokenRequest, composed in-process.
 * NOT FINISHED: waits for the tenant-cert plugin's provider; until then this mode fails with a clear error.
 */
import { CredentialsError } from '../../library/errors.js';
import type { ExecCluster } from '../../library/types.js';
import type { KubeCredential } from '../../kube/types.js';
import type { IssueContext } from '../../plugin/provider.js';
import type { Bootstrap } from './provider.js';

export async function tenantCertCredential(
  _bootstrap: Extract<Bootstrap, { kind: 'tenant-cert' }>,
  _cluster: ExecCluster,
  _context: IssueContext,
): Promise<KubeCredential> {
  throw new CredentialsError('ERR_TOKEN_REQUEST_USAGE', '--bootstrap tenant-cert is not available in this build yet', {
    path: '--bootstrap',
    hint: 'use --bootstrap-kubeconfig or the in-cluster service account',
  });
}
