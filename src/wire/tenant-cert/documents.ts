/**
 * Tenant and Identity documents: build ours, read ours or Liqo's (`authentication.liqo.io/v1beta1`) into one plain
 * shape. The JSON Schemas (`tenant-cert-tenant`, `tenant-cert-identity`) check the shape; this module decodes the
 * base64/PEM fields and reports which one is bad by JSON path.
 */
import type { KeyObject } from 'node:crypto';
import * as identitySchema from '../../generated/validator.tenant-cert-identity.js';
import * as tenantSchema from '../../generated/validator.tenant-cert-tenant.js';
import { assertWith } from '../../schemas/issues.js';
import { buildCsr, parseCsrSync, type CsrSubject, type ParsedCsr } from './csr.js';
import { decodeBase64, encodeBase64, parsePublicKey, publicKeyPem } from './keys.js';
import { signTenant } from './message.js';
import {
  API_VERSION,
  LIQO_API_VERSION,
  tenantError,
  type AuthParams,
  type IdentityDocument,
  type LiqoIdentityDocument,
  type LiqoTenantDocument,
  type SignatureFormat,
  type TenantDocument,
} from './protocol.js';

/**
 * Parsed keys and CSRs by their exact base64 text: a consumer sends the same key (and often the same CSR) with every
 * Tenant, and parsing is a large part of the issuer's cost per handshake. Bounded; only successful parses are kept;
 * the values are never mutated.
 */
const CACHE_LIMIT = 1024;
const publicKeys = new Map<string, KeyObject>();
const csrs = new Map<string, ParsedCsr>();

function cached<T>(cache: Map<string, T>, text: string, parse: () => T): T {
  const hit = cache.get(text);
  if (hit !== undefined) {
    return hit;
  }
  const value = parse();
  if (cache.size >= CACHE_LIMIT) {
    cache.delete(cache.keys().next().value as string);
  }
  cache.set(text, value);
  return value;
}

/** A Tenant after decoding, whatever its flavour. */
export interface ReceivedTenant {
  flavour: 'clusterprofile' | 'liqo';
  consumerClusterID: string;
  /** Absent in Liqo's Tenant. */
  providerClusterID?: string;
  /** Absent in Liqo's Tenant (the issuer then tries the consumer's outstanding nonces). */
  nonce?: string;
  publicKey: KeyObject;
  csr: ParsedCsr;
  signature: Buffer;
  signatureFormat: SignatureFormat;
  /**
   * Liqo's Tenant only: the proxy the consumer reaches the provider's API server through (`liqoctl generate tenant
   * --proxy-url`); Liqo's provider copies it into the Identity's `authParams.proxyURL`, and so does the issuer.
   */
  proxyURL?: string;
}

/**
 * Validates and decodes a Tenant document (ours or Liqo's). Throws ERR_TENANT_INVALID_DOCUMENT,
 * ERR_TENANT_BAD_BASE64, ERR_TENANT_BAD_PEM or ERR_TENANT_UNSUPPORTED_KEY with the JSON path of the bad field.
 * The CSR's self-signature is only reported (`csr.signatureValid`): judging is the issuer's job.
 */
export async function readTenant(document: unknown): Promise<ReceivedTenant> {
  const tenant = assertWith<TenantDocument | LiqoTenantDocument, 'tenant-cert-tenant'>(
    tenantSchema,
    'tenant-cert-tenant',
    document,
    {
      code: 'ERR_TENANT_INVALID_DOCUMENT',
      what: 'the Tenant',
    },
  );
  const publicKey = cached(publicKeys, tenant.spec.publicKey, () =>
    parsePublicKey(decodeBase64(tenant.spec.publicKey, '$.spec.publicKey'), '$.spec.publicKey'),
  );
  const csr = cached(csrs, tenant.spec.csr, () =>
    parseCsrSync(decodeBase64(tenant.spec.csr, '$.spec.csr'), '$.spec.csr'),
  );
  const signature = decodeBase64(tenant.spec.signature, '$.spec.signature');
  if (tenant.apiVersion === LIQO_API_VERSION) {
    return {
      flavour: 'liqo',
      consumerClusterID: tenant.spec.clusterID,
      publicKey,
      csr,
      signature,
      signatureFormat: 'liqo-nonce',
      ...(tenant.spec.proxyURL === undefined || tenant.spec.proxyURL === ''
        ? {}
        : { proxyURL: checkProxyUrl(tenant.spec.proxyURL, '$.spec.proxyURL') }),
    };
  }
  return {
    flavour: 'clusterprofile',
    consumerClusterID: tenant.spec.clusterID,
    providerClusterID: tenant.spec.providerClusterID,
    nonce: tenant.spec.nonce,
    publicKey,
    csr,
    signature,
    signatureFormat: tenant.spec.signatureFormat ?? 'context-v1',
  };
}

/** A proxy URL a document names: http, https or socks5 with a host (what client-go's `proxy-url` dials). */
function checkProxyUrl(text: string, path: string): string {
  const url = URL.parse(text);
  if (url === null || !['http:', 'https:', 'socks5:'].includes(url.protocol) || url.hostname === '') {
    throw tenantError(
      'ERR_TENANT_INVALID_DOCUMENT',
      `the Tenant is invalid: proxyURL ${JSON.stringify(text)} is not an http, https or socks5 URL with a host`,
      { path },
    );
  }
  return text;
}

export interface TenantInput {
  /** The consumer's cluster key (PKCS#8, read with parsePrivateKeyPem). */
  privateKey: KeyObject;
  consumerClusterID: string;
  providerClusterID: string;
  nonce: string;
  /** What the CSR asks for: default CN = consumer ID and no O (the issuer decides the groups). */
  organizations?: readonly string[];
  /** Default `context-v1`; `liqo-nonce` only for a Liqo-compatible issuer. */
  signatureFormat?: SignatureFormat;
}

/**
 * Makes the consumer's Tenant: the CSR built and the context signed in process (the key never leaves it).
 *
 * @example
 * ```ts
 * const tenant = await buildTenant({ privateKey, consumerClusterID: 'c1', providerClusterID: 'p1', nonce });
 * ```
 */
export async function buildTenant(input: TenantInput): Promise<TenantDocument> {
  const subject: CsrSubject = { commonName: input.consumerClusterID, organizations: input.organizations ?? [] };
  const csr = await buildCsr(input.privateKey, subject);
  const format = input.signatureFormat ?? 'context-v1';
  const signature = signTenant(
    input.privateKey,
    {
      providerClusterID: input.providerClusterID,
      consumerClusterID: input.consumerClusterID,
      nonce: input.nonce,
      csrDer: csr.der,
    },
    format,
  );
  return {
    apiVersion: API_VERSION,
    kind: 'Tenant',
    metadata: { name: input.consumerClusterID, labels: { 'liqo.io/remote-cluster-id': input.consumerClusterID } },
    spec: {
      clusterID: input.consumerClusterID,
      providerClusterID: input.providerClusterID,
      nonce: input.nonce,
      publicKey: encodeBase64(publicKeyPem(input.privateKey)),
      csr: encodeBase64(csr.pem),
      signature: encodeBase64(signature),
      ...(format === 'context-v1' ? {} : { signatureFormat: format }),
    },
  };
}

export interface IdentityInput {
  providerClusterID: string;
  consumerClusterID: string;
  certificatePem: string;
  notBefore: Date;
  notAfter: Date;
  apiServer?: string;
  /** PEM of the API server's CA bundle. */
  apiServerCaPem?: string;
  proxyURL?: string;
}

function authParams(input: IdentityInput): AuthParams {
  return {
    ...(input.apiServerCaPem === undefined ? {} : { ca: encodeBase64(input.apiServerCaPem) }),
    signedCRT: encodeBase64(input.certificatePem),
    ...(input.apiServer === undefined ? {} : { apiServer: input.apiServer }),
    ...(input.proxyURL === undefined ? {} : { proxyURL: input.proxyURL }),
  };
}

/** The provider's answer in our flavour. */
export function buildIdentity(input: IdentityInput): IdentityDocument {
  return {
    apiVersion: API_VERSION,
    kind: 'Identity',
    metadata: {
      name: `${input.providerClusterID}-${input.consumerClusterID}`,
      labels: { 'liqo.io/remote-cluster-id': input.providerClusterID },
    },
    spec: {
      clusterID: input.providerClusterID,
      consumerClusterID: input.consumerClusterID,
      authParams: authParams(input),
      notBefore: input.notBefore.toISOString(),
      notAfter: input.notAfter.toISOString(),
    },
  };
}

/** The provider's answer as Liqo's `liqoctl generate identity` prints it (for a Liqo-shaped Tenant). */
export function buildLiqoIdentity(input: IdentityInput): LiqoIdentityDocument {
  return {
    apiVersion: LIQO_API_VERSION,
    kind: 'Identity',
    metadata: {
      name: `controlplane-${input.providerClusterID}`,
      labels: { 'liqo.io/remote-cluster-id': input.providerClusterID },
      creationTimestamp: null,
    },
    spec: {
      authParams: authParams(input),
      clusterID: input.providerClusterID,
      namespace: `liqo-tenant-${input.consumerClusterID}`,
      type: 'ControlPlane',
    },
    status: {},
  };
}

/** An Identity after decoding, whatever its flavour. */
export interface ReceivedIdentity {
  flavour: 'clusterprofile' | 'liqo';
  providerClusterID: string;
  /** Ours names it; Liqo's only through `spec.namespace` (`liqo-tenant-<consumer>`), when present. */
  consumerClusterID?: string;
  certificatePem: string;
  apiServerCaPem?: string;
  apiServer?: string;
  proxyURL?: string;
}

/** Validates and decodes an Identity document (ours or Liqo's). */
export function readIdentity(document: unknown): ReceivedIdentity {
  const identity = assertWith<IdentityDocument | LiqoIdentityDocument, 'tenant-cert-identity'>(
    identitySchema,
    'tenant-cert-identity',
    document,
    {
      code: 'ERR_TENANT_INVALID_DOCUMENT',
      what: 'the Identity',
    },
  );
  const params = identity.spec.authParams;
  const certificatePem = decodeBase64(params.signedCRT, '$.spec.authParams.signedCRT').toString('utf8');
  if (!certificatePem.includes('-----BEGIN CERTIFICATE-----')) {
    throw tenantError('ERR_TENANT_BAD_PEM', 'signedCRT is not a PEM certificate', {
      path: '$.spec.authParams.signedCRT',
    });
  }
  let apiServerCaPem: string | undefined;
  if (params.ca !== undefined && params.ca !== '') {
    apiServerCaPem = decodeBase64(params.ca, '$.spec.authParams.ca').toString('utf8');
    if (!apiServerCaPem.includes('-----BEGIN CERTIFICATE-----')) {
      throw tenantError('ERR_TENANT_BAD_PEM', 'ca is not a PEM certificate bundle', { path: '$.spec.authParams.ca' });
    }
  }
  const consumerClusterID =
    identity.apiVersion === API_VERSION
      ? identity.spec.consumerClusterID
      : identity.spec.namespace?.startsWith('liqo-tenant-')
        ? identity.spec.namespace.slice('liqo-tenant-'.length)
        : undefined;
  return {
    flavour: identity.apiVersion === API_VERSION ? 'clusterprofile' : 'liqo',
    providerClusterID: identity.spec.clusterID,
    ...(consumerClusterID === undefined ? {} : { consumerClusterID }),
    certificatePem,
    ...(apiServerCaPem === undefined ? {} : { apiServerCaPem }),
    ...(params.apiServer === undefined || params.apiServer === '' ? {} : { apiServer: params.apiServer }),
    ...(params.proxyURL === undefined || params.proxyURL === '' ? {} : { proxyURL: params.proxyURL }),
  };
}
