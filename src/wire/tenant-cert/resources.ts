/**
 * The declarative flow's resources on the provider cluster: Tenant and Identity of `credentials.clusterprofile.io/v1alpha1`
 * (schemas `tenant-resource`, `identity-resource`; CRDs in deploy/crds/) and the kubeconfig Secret an Identity owns.
 * Paths, shapes and the conversion between a resource and the documents of the HTTPS API. Shared by the issuer's
 * reconciler and the consumer commands; the call helper that turns an unexpected answer into `ERR_TENANT_FLOW_API`
 * needs the Kubernetes client, so it is src/kube/tenant-flow-call.ts (this room imports only core and schemas).
 */
import {
  API_VERSION,
  LIQO_API_VERSION,
  type GrantedSubject,
  type IdentityDocument,
  type LiqoTenantDocument,
  type SignatureFormat,
  type TenantDocument,
} from './protocol.js';

export const FLOW_GROUP = 'credentials.clusterprofile.io';
export const FLOW_VERSION = 'v1alpha1';
/** The condition the issuer writes on a Tenant. */
export const READY = 'Ready';
/** Labels and annotations the issuer puts on what it writes. */
export const TENANT_UID_ANNOTATION = 'credentials.clusterprofile.io/tenant-uid';
export const TENANT_GENERATION_ANNOTATION = 'credentials.clusterprofile.io/tenant-generation';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'clusterprofile-issuer';

export const tenantsPath = (namespace: string): string =>
  `/apis/${FLOW_GROUP}/${FLOW_VERSION}/namespaces/${encodeURIComponent(namespace)}/tenants`;
export const tenantPath = (namespace: string, name: string): string =>
  `${tenantsPath(namespace)}/${encodeURIComponent(name)}`;
export const identitiesPath = (namespace: string): string =>
  `/apis/${FLOW_GROUP}/${FLOW_VERSION}/namespaces/${encodeURIComponent(namespace)}/identities`;
export const identityPath = (namespace: string, name: string): string =>
  `${identitiesPath(namespace)}/${encodeURIComponent(name)}`;
export const secretsPath = (namespace: string): string => `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
export const secretPath = (namespace: string, name: string): string =>
  `${secretsPath(namespace)}/${encodeURIComponent(name)}`;

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  deletionTimestamp?: string;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface TenantCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message?: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface TenantStatus {
  observedGeneration?: number;
  nonce?: { value: string; expiresAt: string; subject?: GrantedSubject };
  identityRef?: { name: string };
  kubeconfigSecretRef?: { name: string };
  notBefore?: string;
  notAfter?: string;
  renewAfter?: string;
  conditions?: TenantCondition[];
}

export interface TenantSpec {
  clusterID: string;
  providerClusterID?: string;
  nonceRequest?: { timestamp: string; signature: string };
  nonce?: string;
  publicKey?: string;
  csr?: string;
  signature?: string;
  signatureFormat?: SignatureFormat;
  proxyURL?: string;
  authzPolicy?: string;
  tenantCondition?: string;
}

/** A Tenant resource (schema `tenant-resource`). */
export interface TenantResource {
  apiVersion: typeof API_VERSION;
  kind: 'Tenant';
  metadata: ObjectMeta;
  spec: TenantSpec;
  status?: TenantStatus;
}

/** An Identity resource (schema `identity-resource`): the Identity document's spec, owning a kubeconfig Secret. */
export interface IdentityResource {
  apiVersion: typeof API_VERSION;
  kind: 'Identity';
  metadata: ObjectMeta;
  spec: IdentityDocument['spec'];
  status?: { kubeconfigSecretRef?: { name: string } };
}

/** Which step a Tenant's spec is at: the signed Tenant (step 2) wins over a nonce request (step 1). */
export function tenantStep(spec: TenantSpec): 'tenant' | 'nonce-request' | 'none' {
  if (
    spec.csr !== undefined ||
    spec.signature !== undefined ||
    spec.nonce !== undefined ||
    spec.publicKey !== undefined
  )
    return 'tenant';
  return spec.nonceRequest !== undefined ? 'nonce-request' : 'none';
}

/**
 * The Tenant document of the HTTPS API that a resource's step-2 spec is: ours when it names a nonce or a provider,
 * Liqo's (`authentication.liqo.io/v1beta1`: clusterID, publicKey, csr, signature) otherwise. Absent fields stay absent,
 * so the document's schema reports them (`ERR_TENANT_INVALID_DOCUMENT` with their path).
 */
export function tenantDocumentOf(resource: TenantResource): TenantDocument | LiqoTenantDocument {
  const { spec } = resource;
  const pick = <K extends keyof TenantSpec>(...keys: K[]): Partial<Pick<TenantSpec, K>> =>
    Object.fromEntries(keys.filter((key) => spec[key] !== undefined).map((key) => [key, spec[key]])) as Partial<
      Pick<TenantSpec, K>
    >;
  const metadata = {
    name: resource.metadata.name,
    ...(resource.metadata.labels === undefined ? {} : { labels: resource.metadata.labels }),
  };
  if (spec.nonce === undefined && spec.providerClusterID === undefined) {
    return {
      apiVersion: LIQO_API_VERSION,
      kind: 'Tenant',
      metadata,
      spec: pick('clusterID', 'publicKey', 'csr', 'signature', 'proxyURL', 'authzPolicy', 'tenantCondition'),
    } as LiqoTenantDocument;
  }
  return {
    apiVersion: API_VERSION,
    kind: 'Tenant',
    metadata,
    spec: pick('clusterID', 'providerClusterID', 'nonce', 'publicKey', 'csr', 'signature', 'signatureFormat'),
  } as TenantDocument;
}

/** The Identity document an Identity resource is (what `identity import` reads from a file). */
export function identityDocumentOf(resource: IdentityResource): IdentityDocument {
  return {
    apiVersion: API_VERSION,
    kind: 'Identity',
    metadata: {
      name: resource.metadata.name,
      ...(resource.metadata.labels === undefined ? {} : { labels: resource.metadata.labels }),
    },
    spec: resource.spec,
  };
}
