/**
 * One call to the declarative tenant-cert flow's resources (src/wire/tenant-cert/resources.ts): the answer when its
 * status is expected, `ERR_TENANT_FLOW_API` with a hint (CRDs missing, rights missing) otherwise. Shared by the
 * issuer's Tenant reconciler and the consumer commands; here because it needs the Kubernetes client, which the wire
 * room (documents only) does not import.
 */
import { CredentialsError } from '../base/errors.js';
import { FLOW_GROUP } from '../wire/tenant-cert/resources.js';
import { statusMessage } from './status.js';
import type { KubeRequest, KubeResponse, SendKubeRequest } from './types.js';

/**
 * Sends one request and returns the answer when its status is one of `expected`; any other status is
 * `ERR_TENANT_FLOW_API` naming the request and quoting the API server's message (never a credential: the transport
 * redacts the bearer token from error answers).
 */
export async function kubeCall(
  send: SendKubeRequest,
  request: KubeRequest,
  expected: readonly number[],
  what: string,
  signal?: AbortSignal,
): Promise<KubeResponse> {
  const response = await send(request, signal === undefined ? {} : { signal });
  // A 404 is "no such object" only when the Status names the object; without a name the resource type itself is
  // unknown to the API server (the CRDs are not installed).
  const missingType =
    response.status === 404 &&
    typeof (response.body as { details?: { name?: unknown } } | null)?.details?.name !== 'string';
  if (!expected.includes(response.status) || missingType) {
    const message = statusMessage(response.body);
    const hint =
      response.status === 404 && request.path.includes(`/apis/${FLOW_GROUP}/`)
        ? 'install the CRDs: kubectl apply --server-side -f deploy/crds/'
        : response.status === 403
          ? 'grant the rights of deploy/base/tenant-flow-rbac.yaml'
          : undefined;
    throw new CredentialsError(
      'ERR_TENANT_FLOW_API',
      `${what}: the API server answered ${response.status}${message === undefined ? '' : `: ${message}`}`,
      {
        path: request.path.split('?', 1)[0] ?? request.path,
        ...(hint === undefined ? {} : { hint }),
      },
    );
  }
  return response;
}
