/**
 * The declarative flow, consumer side: `clusterprofile tenant apply --to-cluster` writes this cluster's Tenant resource
 * on the provider cluster and waits for the issuer's answers; `clusterprofile identity import --from-cluster` reads the
 * Identity resource back. The private key stays here: the Tenant carries a signed nonce request, then the CSR and the
 * signature over the issued nonce (the documents of the HTTPS API, built by the same code).
 *
 * Steps of `applyTenant` (each spec change is a new generation the issuer answers once, in `status`):
 * 1. spec = {clusterID, providerClusterID, nonceRequest: signed (purpose, provider, consumer, timestamp)} → wait for
 *    `status.nonce` (reason `NonceIssued`);
 * 2. spec = the Tenant document's spec for that nonce (CSR for the granted subject, context-v1 signature) → wait for
 *    reason `Issued` and `status.identityRef`.
 * A refusal is thrown with the issuer's code (the condition's reason) and message. Renewal is the same two steps on the
 * same Tenant; the issuer replaces the certificate in the same Identity and Secret.
 */
import type { KeyObject } from 'node:crypto';
import { CredentialsError, errorSpec, type ErrorCode } from '../../../base/errors.js';
import type { SendKubeRequest } from '../../../kube/types.js';
import { buildTenant } from '../../../wire/tenant-cert/documents.js';
import { signNonceRequest } from '../../../wire/tenant-cert/message.js';
import { API_VERSION } from '../../../wire/tenant-cert/protocol.js';
import {
  READY,
  identityDocumentOf,
  identityPath,
  tenantPath,
  tenantsPath,
  type IdentityResource,
  type TenantResource,
  type TenantSpec,
  type TenantStatus,
} from '../../../wire/tenant-cert/resources.js';
import { kubeCall } from '../../../kube/tenant-flow-call.js';

export interface ClusterFlowOptions {
  send: SendKubeRequest;
  namespace: string;
  /** The Tenant's name; default the consumer cluster ID. */
  tenantName?: string;
  now(): Date;
  /** Waits between reads of the Tenant's status (default 200 ms). */
  pollMs?: number;
}

export interface ApplyTenantOptions extends ClusterFlowOptions {
  privateKey: KeyObject;
  consumerClusterID: string;
  providerClusterID: string;
  /** How long to wait for each answer of the issuer. */
  timeoutMs: number;
  /** Renew even when the certificate is before its renewal point. */
  force?: boolean;
}

export interface AppliedTenant {
  tenant: string;
  identity: string;
  secret?: string;
  notAfter?: string;
  renewAfter?: string;
  /** False when the certificate was still before its renewal point and nothing was asked for. */
  renewed: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The refusal a Ready condition describes, as the error the issuer raised. */
function refusal(status: TenantStatus | undefined, where: string): CredentialsError {
  const ready = status?.conditions?.find((item) => item.type === READY);
  const reason = ready?.reason ?? '';
  const code: ErrorCode =
    /^ERR_[A-Z0-9_]+$/.test(reason) && errorSpec(reason) !== undefined ? (reason as ErrorCode) : 'ERR_TENANT_FLOW_API';
  return new CredentialsError(code, `${where} was refused by the issuer: ${ready?.message ?? reason}`, { path: where });
}

async function readTenant(o: ClusterFlowOptions, name: string): Promise<TenantResource | undefined> {
  const response = await kubeCall(
    o.send,
    { method: 'GET', path: tenantPath(o.namespace, name) },
    [200, 404],
    `reading Tenant ${o.namespace}/${name}`,
  );
  return response.status === 200 ? (response.body as TenantResource) : undefined;
}

/** Writes `spec` (creating the Tenant, or replacing its spec); returns the generation to wait for. */
async function writeSpec(o: ClusterFlowOptions, name: string, spec: TenantSpec): Promise<number> {
  for (let attempt = 0; ; attempt += 1) {
    const current = await readTenant(o, name);
    const body: TenantResource =
      current === undefined
        ? {
            apiVersion: API_VERSION,
            kind: 'Tenant',
            metadata: { name, labels: { 'liqo.io/remote-cluster-id': spec.clusterID } },
            spec,
          }
        : { ...current, spec };
    const response =
      current === undefined
        ? await kubeCall(
            o.send,
            { method: 'POST', path: tenantsPath(o.namespace), body },
            [201, 409],
            `creating Tenant ${o.namespace}/${name}`,
          )
        : await kubeCall(
            o.send,
            { method: 'PUT', path: tenantPath(o.namespace, name), body },
            [200, 409],
            `writing Tenant ${o.namespace}/${name}`,
          );
    if (response.status !== 409) return (response.body as TenantResource).metadata.generation ?? 0;
    if (attempt >= 4) {
      throw new CredentialsError(
        'ERR_TENANT_FLOW_API',
        `writing Tenant ${o.namespace}/${name}: it kept changing under us (409 Conflict)`,
        { path: tenantPath(o.namespace, name) },
      );
    }
  }
}

/** The Tenant once the issuer answered `generation`, or ERR_TENANT_FLOW_TIMEOUT. */
async function answered(
  o: ClusterFlowOptions,
  name: string,
  generation: number,
  timeoutMs: number,
): Promise<TenantResource> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const tenant = await readTenant(o, name);
    if (tenant === undefined) {
      throw new CredentialsError(
        'ERR_TENANT_FLOW_API',
        `Tenant ${o.namespace}/${name} was deleted while waiting for the issuer`,
        { path: tenantPath(o.namespace, name) },
      );
    }
    if ((tenant.status?.observedGeneration ?? -1) >= generation) return tenant;
    if (Date.now() >= deadline) {
      throw new CredentialsError(
        'ERR_TENANT_FLOW_TIMEOUT',
        `the issuer did not answer Tenant ${o.namespace}/${name} (generation ${generation}) within ${Math.round(timeoutMs / 1000)} s`,
        {
          path: tenantPath(o.namespace, name),
          hint: `is clusterprofile issuer serve --reconcile-tenants --namespace ${o.namespace} running on the provider cluster?`,
        },
      );
    }
    await sleep(o.pollMs ?? 200);
  }
}

/** Creates or renews this cluster's Tenant on the provider cluster (see the module comment). */
export async function applyTenant(o: ApplyTenantOptions): Promise<AppliedTenant> {
  const name = o.tenantName ?? o.consumerClusterID;
  const where = `Tenant ${o.namespace}/${name}`;
  const current = await readTenant(o, name);
  const status = current?.status;
  const ready = status?.conditions?.find((item) => item.type === READY);
  if (
    o.force !== true &&
    current !== undefined &&
    ready?.status === 'True' &&
    status?.observedGeneration === current.metadata.generation &&
    status?.identityRef !== undefined &&
    status.renewAfter !== undefined &&
    o.now().getTime() < Date.parse(status.renewAfter)
  ) {
    return {
      tenant: name,
      identity: status.identityRef.name,
      ...(status.kubeconfigSecretRef === undefined ? {} : { secret: status.kubeconfigSecretRef.name }),
      ...(status.notAfter === undefined ? {} : { notAfter: status.notAfter }),
      renewAfter: status.renewAfter,
      renewed: false,
    };
  }

  const ids = { providerClusterID: o.providerClusterID, consumerClusterID: o.consumerClusterID };
  const request = signNonceRequest(o.privateKey, ids, o.now());
  const first = await writeSpec(o, name, {
    clusterID: o.consumerClusterID,
    providerClusterID: o.providerClusterID,
    nonceRequest: { timestamp: request.timestamp, signature: request.signature },
  });
  const withNonce = await answered(o, name, first, o.timeoutMs);
  const nonce = withNonce.status?.nonce;
  if (
    withNonce.status?.conditions?.find((item) => item.type === READY)?.reason !== 'NonceIssued' ||
    nonce === undefined
  ) {
    throw refusal(withNonce.status, where);
  }

  const document = await buildTenant({
    privateKey: o.privateKey,
    ...ids,
    nonce: nonce.value,
    organizations: nonce.subject?.organizations ?? [],
  });
  const second = await writeSpec(o, name, document.spec);
  const done = await answered(o, name, second, o.timeoutMs);
  const final = done.status;
  if (final?.conditions?.find((item) => item.type === READY)?.status !== 'True' || final.identityRef === undefined) {
    throw refusal(final, where);
  }
  return {
    tenant: name,
    identity: final.identityRef.name,
    ...(final.kubeconfigSecretRef === undefined ? {} : { secret: final.kubeconfigSecretRef.name }),
    ...(final.notAfter === undefined ? {} : { notAfter: final.notAfter }),
    ...(final.renewAfter === undefined ? {} : { renewAfter: final.renewAfter }),
    renewed: true,
  };
}

/**
 * The Identity the issuer wrote for this cluster's Tenant, as the text of an Identity document (what `identity
 * import` reads from a file); ERR_TENANT_FLOW_NO_IDENTITY when the Tenant has none.
 */
export async function readIdentityFromCluster(
  o: ClusterFlowOptions & { consumerClusterID: string },
): Promise<{ text: string; source: string }> {
  const name = o.tenantName ?? o.consumerClusterID;
  const tenant = await readTenant(o, name);
  const ref = tenant?.status?.identityRef;
  if (tenant === undefined || ref === undefined) {
    const ready = tenant?.status?.conditions?.find((item) => item.type === READY);
    throw new CredentialsError(
      'ERR_TENANT_FLOW_NO_IDENTITY',
      tenant === undefined
        ? `there is no Tenant ${o.namespace}/${name} on the provider cluster`
        : `Tenant ${o.namespace}/${name} has no Identity${ready === undefined ? ' yet' : ` (${ready.reason}: ${ready.message ?? ''})`}`,
      { path: tenantPath(o.namespace, name), hint: 'run clusterprofile tenant apply --to-cluster first' },
    );
  }
  const response = await kubeCall(
    o.send,
    { method: 'GET', path: identityPath(o.namespace, ref.name) },
    [200, 404],
    `reading Identity ${o.namespace}/${ref.name}`,
  );
  if (response.status === 404) {
    throw new CredentialsError(
      'ERR_TENANT_FLOW_NO_IDENTITY',
      `Tenant ${o.namespace}/${name} names Identity ${ref.name}, which does not exist`,
      {
        path: identityPath(o.namespace, ref.name),
        hint: 'run clusterprofile tenant apply --to-cluster --force',
      },
    );
  }
  const identity = response.body as IdentityResource;
  return {
    text: `${JSON.stringify(identityDocumentOf(identity), null, 2)}\n`,
    source: `Identity ${o.namespace}/${ref.name}`,
  };
}
