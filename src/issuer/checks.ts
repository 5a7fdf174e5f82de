/**
 * The checks a Tenant passes before anything is signed, as pure functions (the issuer feeds them the trust record
 * and the nonce record it looked up). Each failure has its own stable code; the order is the order of
 * {@link import('./issuer.js').Issuer.acceptTenant}.
 */
import type { KeyObject } from 'node:crypto';
import type { ReceivedTenant } from '../wire/tenant-cert/documents.js';
import { OID, type ParsedCsr } from '../wire/tenant-cert/csr.js';
import { decodeBase64, samePublicKey } from '../wire/tenant-cert/keys.js';
import { verifyNonceRequest, verifyTenant } from '../wire/tenant-cert/message.js';
import {
  NONCE_REQUEST_MAX_SKEW_MS,
  tenantError,
  type GrantedSubject,
  type NonceRequest,
} from '../wire/tenant-cert/protocol.js';
import { x509 } from '../wire/tenant-cert/x509.js';
import type { NonceRecord } from './state/issuer-state.js';

/** A nonce request's timestamp is within {@link NONCE_REQUEST_MAX_SKEW_MS} of the issuer's clock (either way). */
export function checkNonceRequestTime(timestamp: string, now: Date): void {
  const at = Date.parse(timestamp);
  if (!Number.isFinite(at) || Math.abs(at - now.getTime()) > NONCE_REQUEST_MAX_SKEW_MS) {
    throw tenantError(
      'ERR_TENANT_NONCE_REQUEST_STALE',
      `the nonce request's timestamp ${timestamp} is more than ${NONCE_REQUEST_MAX_SKEW_MS / 60_000} minutes from the issuer's clock (${now.toISOString()})`,
      { path: '$.timestamp', hint: 'sign a new request with the current time; check the clocks (NTP)' },
    );
  }
}

/** A nonce request's signature is the trusted consumer key's over (purpose, provider, consumer, timestamp). */
export function checkNonceRequestSignature(
  request: NonceRequest,
  providerClusterID: string,
  trustedKey: KeyObject,
): void {
  const signature = decodeBase64(request.signature, '$.signature');
  const context = { providerClusterID, consumerClusterID: request.consumerClusterID, timestamp: request.timestamp };
  if (!verifyNonceRequest(trustedKey, context, signature)) {
    throw tenantError(
      'ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID',
      `the nonce request is not signed by the key registered for ${request.consumerClusterID}`,
      {
        path: '$.signature',
        hint: 'sign the nonce request with the cluster key the provider admin registered (clusterprofile issuer trust)',
      },
    );
  }
}

/** ERR_TENANT_NONCE_UNKNOWN: the nonce is none this issuer issued (or it expired long ago). */
export function unknownNonce(): ReturnType<typeof tenantError> {
  return tenantError('ERR_TENANT_NONCE_UNKNOWN', 'the nonce was not issued by this issuer (or expired long ago)', {
    path: '$.spec.nonce',
    hint: 'ask the issuer for a new nonce (POST /v1/nonces)',
  });
}

/** The nonce exists, was issued for this consumer, is not expired and not used. */
export function checkNonce(record: NonceRecord | undefined, consumerClusterID: string, now: Date): void {
  if (record === undefined) {
    throw unknownNonce();
  }
  if (record.consumer !== consumerClusterID) {
    throw tenantError(
      'ERR_TENANT_NONCE_WRONG_CONSUMER',
      `the nonce was issued for another consumer cluster, not ${consumerClusterID}`,
      {
        path: '$.spec.nonce',
      },
    );
  }
  if (record.expiresAt <= now.getTime()) {
    throw tenantError('ERR_TENANT_NONCE_EXPIRED', `the nonce expired at ${new Date(record.expiresAt).toISOString()}`, {
      path: '$.spec.nonce',
      hint: 'ask for a new nonce and send the Tenant within its lifetime; check the clocks',
    });
  }
  if (record.consumed) {
    throw tenantError('ERR_TENANT_NONCE_REUSED', 'the nonce was already used (a nonce is good for one Tenant)', {
      path: '$.spec.nonce',
      hint: 'ask for a new nonce',
    });
  }
}

/** The Tenant's key is the key the admin registered, and the CSR asks for that same key. */
export function checkKeys(tenant: ReceivedTenant, trustedKey: KeyObject): void {
  if (!samePublicKey(tenant.publicKey, trustedKey)) {
    throw tenantError(
      'ERR_TENANT_KEY_NOT_TRUSTED',
      `the Tenant's public key is not the key registered for ${tenant.consumerClusterID}`,
      {
        path: '$.spec.publicKey',
        hint: 'the provider admin registers the consumer key with `clusterprofile issuer trust`',
      },
    );
  }
  if (!samePublicKey(tenant.csr.publicKey, tenant.publicKey)) {
    throw tenantError(
      'ERR_TENANT_CSR_KEY_MISMATCH',
      "the CSR requests a certificate for another key than the Tenant's",
      { path: '$.spec.csr' },
    );
  }
}

/** The signature over the context (or, in Liqo-compat mode, over the nonce alone) is the consumer's. */
export function checkSignature(tenant: ReceivedTenant, providerClusterID: string, nonce: string): void {
  const valid = verifyTenant(
    tenant.publicKey,
    { providerClusterID, consumerClusterID: tenant.consumerClusterID, nonce, csrDer: tenant.csr.der },
    tenant.signature,
    tenant.signatureFormat,
  );
  if (!valid) {
    throw tenantError(
      'ERR_TENANT_SIGNATURE_INVALID',
      `the signature is not ${tenant.consumerClusterID}'s over this nonce, provider, consumer and CSR`,
      {
        path: '$.spec.signature',
      },
    );
  }
}

/** Extensions a CSR may request because they say no more than the issuer grants anyway. */
function checkExtension(extension: ParsedCsr['extensions'][number]): string | undefined {
  try {
    switch (extension.type) {
      case OID.keyUsage: {
        const usages = new x509.KeyUsagesExtension(extension.raw).usages;
        const allowed = x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment;
        return (usages & ~allowed) === 0 ? undefined : 'key usages beyond digitalSignature and keyEncipherment';
      }
      case OID.extKeyUsage: {
        const usages = new x509.ExtendedKeyUsageExtension(extension.raw).usages.map(String);
        return usages.every((usage) => usage === OID.clientAuth)
          ? undefined
          : `extended key usages ${usages.join(', ')} (only clientAuth is issued)`;
      }
      case OID.basicConstraints:
        return new x509.BasicConstraintsExtension(extension.raw).ca ? 'a CA certificate' : undefined;
      default:
        return `extension ${extension.type}`;
    }
  } catch {
    return `an unreadable extension ${extension.type}`;
  }
}

/**
 * The CSR asks for nothing but the subject the issuer grants: exactly one CN equal to the consumer ID, O values
 * among the granted groups (all of them, in any order, when the signer copies the CSR subject), no other subject
 * attributes, no SANs, no attributes, no extensions beyond a client certificate's own.
 */
export function checkCsr(
  csr: ParsedCsr,
  granted: GrantedSubject,
  options: { exactGroups: boolean; tolerate?: readonly string[] },
): void {
  if (!csr.signatureValid) {
    throw tenantError(
      'ERR_TENANT_CSR_SIGNATURE_INVALID',
      "the CSR's self-signature is invalid (or made with an algorithm other than Ed25519, ECDSA or RSA over SHA-2)",
      {
        path: '$.spec.csr',
      },
    );
  }
  if (csr.commonNames.length !== 1 || csr.commonNames[0] !== granted.commonName) {
    throw tenantError(
      'ERR_TENANT_CSR_SUBJECT',
      `the CSR's subject must have exactly one CN, ${granted.commonName}; it has ${JSON.stringify(csr.commonNames)}`,
      {
        path: '$.spec.csr',
      },
    );
  }
  if (csr.otherSubjectTypes.length > 0) {
    throw tenantError(
      'ERR_TENANT_CSR_SUBJECT',
      `the CSR's subject may only hold CN and O; it also has ${[...new Set(csr.otherSubjectTypes)].join(', ')}`,
      {
        path: '$.spec.csr',
      },
    );
  }
  const tolerated = new Set(options.tolerate ?? []);
  const requested = csr.organizations.filter(
    (group) => !(tolerated.has(group) && !granted.organizations.includes(group)),
  );
  const extra = requested.filter((group) => !granted.organizations.includes(group));
  if (extra.length > 0 || new Set(requested).size !== requested.length) {
    throw tenantError(
      'ERR_TENANT_CSR_GROUPS',
      `the CSR asks for groups the issuer does not grant: ${JSON.stringify(extra.length > 0 ? extra : requested)}`,
      {
        path: '$.spec.csr',
        hint: `this consumer is granted ${JSON.stringify(granted.organizations)}; leave O out of the CSR and the issuer fills it in`,
      },
    );
  }
  if (
    options.exactGroups &&
    (requested.length !== granted.organizations.length || requested.length !== csr.organizations.length)
  ) {
    throw tenantError(
      'ERR_TENANT_CSR_GROUPS',
      `with the Kubernetes signer the CSR must ask for exactly the granted groups ${JSON.stringify(granted.organizations)}`,
      {
        path: '$.spec.csr',
        hint: 'build the CSR from the subject in the nonce response',
      },
    );
  }
  if (csr.subjectAltNames.length > 0 || csr.extensions.some((e) => e.type === OID.subjectAltName)) {
    throw tenantError(
      'ERR_TENANT_CSR_SANS',
      `the CSR asks for subject alternative names (${csr.subjectAltNames.join(', ')}); a client certificate gets none`,
      {
        path: '$.spec.csr',
      },
    );
  }
  if (csr.otherAttributes.length > 0) {
    throw tenantError('ERR_TENANT_CSR_EXTENSIONS', `the CSR carries attributes ${csr.otherAttributes.join(', ')}`, {
      path: '$.spec.csr',
    });
  }
  const seen = new Set<string>();
  for (const extension of csr.extensions) {
    const problem = seen.has(extension.type) ? `extension ${extension.type} twice` : checkExtension(extension);
    seen.add(extension.type);
    if (problem !== undefined) {
      throw tenantError('ERR_TENANT_CSR_EXTENSIONS', `the CSR asks for ${problem}`, { path: '$.spec.csr' });
    }
  }
}
