/**
 * The tenant-cert identity as the bootstrap credential for TokenRequest, composed in-process: the tenant-cert
 * provider runs through the same runtime as its own binary (same cache entry under
 * `$KUBECACHEDIR/clusterprofile/tenant-cert`, same lock, same checks), against the same `spec.cluster`, so the
 * certificate is shared with a standalone `clusterprofile-tenant-cert` for that cluster and renewed by the same rules.
 */
import { PassThrough, Readable } from 'node:stream';
import { CredentialsError } from '../../core/errors.js';
import type { ExecCluster } from '../../core/exec-credential.js';
import type { KubeCredential } from '../../kube/types.js';
import { runPlugin } from '../../plugin/run.js';
import type { IssueContext } from '../../plugin/provider.js';
import { LOCK_TIMEOUT_MS } from '../tenant-cert/main.js';
import { tenantCertProvider } from '../tenant-cert/plugin.js';
import type { Bootstrap } from './settings.js';

export async function tenantCertCredential(
  bootstrap: Extract<Bootstrap, { kind: 'tenant-cert' }>,
  cluster: ExecCluster,
  context: IssueContext,
): Promise<KubeCredential> {
  // The same lock patience as the tenant-cert binary: a parallel start waits for the one handshake instead of failing.
  const run = runPlugin(tenantCertProvider, { now: context.now, lockTimeoutMs: LOCK_TIMEOUT_MS });
  const input = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false, cluster } };
  const stdout = new PassThrough();
  let printed = '';
  stdout.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  const code = await run(
    ['--cluster-id', bootstrap.clusterId, '--key-file', bootstrap.keyFile],
    { ...context.env, KUBERNETES_EXEC_INFO: JSON.stringify(input) },
    { stdin: Readable.from([]), stdout, stderr: context.stderr },
  );
  if (code !== 0) {
    throw new CredentialsError('ERR_TOKEN_REQUEST_BOOTSTRAP', 'the tenant-cert bootstrap identity could not be obtained (the reason is on the line above)', {
      path: '--bootstrap tenant-cert',
    });
  }
  const status = (JSON.parse(printed) as { status: { clientCertificateData?: string; clientKeyData?: string } }).status;
  if (status.clientCertificateData === undefined || status.clientKeyData === undefined) {
    throw new CredentialsError('ERR_TOKEN_REQUEST_BOOTSTRAP', 'the tenant-cert bootstrap returned no client certificate', { path: '--bootstrap tenant-cert' });
  }
  return { kind: 'certificate', certificatePem: status.clientCertificateData, keyPem: status.clientKeyData };
}
