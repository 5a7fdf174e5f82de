/**
 * The issuer without HTTP: issue a nonce, accept a Tenant and answer an Identity. The HTTPS server (./server.ts)
 * and the manual-flow commands (`clusterprofile tenant nonce|accept`) both call this.
 *
 * Nonce policy: a nonce is spent by the first Tenant that presents it, whatever the outcome — once the Tenant is
 * well-formed, names a trusted consumer and the nonce is that consumer's, fresh and unused, the nonce is marked used
 * (durably) *before* the signature and CSR are even looked at. A failed attempt therefore costs the consumer a new
 * nonce, never gives anyone a second try with the same one. A malformed document, an unknown consumer or a nonce
 * of another consumer spend nothing of the consumer's (they cannot be attributed to it).
 * Liqo-shaped Tenants name no nonce: the consumer's outstanding nonces are tried and the one that verifies is spent.
 */
import { X509Certificate } from 'node:crypto';
import { readTenant, buildIdentity, buildLiqoIdentity, type ReceivedTenant } from '../wire/tenant-cert/documents.js';
import { assertDocument } from '../schemas/index.js';
import { verifyTenant } from '../wire/tenant-cert/message.js';
import {
  tenantError,
  type IdentityDocument,
  type LiqoIdentityDocument,
  type NonceRequest,
  type NonceResponse,
  type GrantedSubject,
  NONCE_REQUEST_MAX_SKEW_MS,
} from '../wire/tenant-cert/protocol.js';
import { samePublicKey } from '../wire/tenant-cert/keys.js';
import { checkCsr, checkKeys, checkNonceRequestSignature, checkNonceRequestTime, checkSignature } from './checks.js';
import { grantedSubject } from './policy.js';
import type { Signer } from './signer/signer.js';
import type { AnsweredRequest, NonceBook, TrustSource } from './state/issuer-state.js';
import type { TrustedConsumer } from './state/trust-record.js';

export interface IssuerOptions {
  providerClusterID: string;
  trust: TrustSource;
  /** The nonces, and the replay memory of signed nonce requests (./state/issuer-state.ts). */
  nonces: NonceBook;
  signer: Signer;
  /** Issuer-wide group templates (`{clusterID}` is replaced). */
  groups: readonly string[];
  nonceTtlMs: number;
  certLifetimeMs: number;
  /** NotBefore = now − backdate (default 5 minutes), for clients whose clock is behind. */
  backdateMs?: number;
  /** Accept Liqo-shaped Tenants and signatures over the nonce alone. */
  liqoCompat: boolean;
  apiServer?: string;
  apiServerCaPem?: string;
  proxyURL?: string;
  now(): Date;
  /** One line per decision (audit). */
  log?(line: string): void;
}

export interface AcceptedTenant {
  identity: IdentityDocument | LiqoIdentityDocument;
  certificatePem: string;
  consumerClusterID: string;
  notAfter: Date;
}

export class Issuer {
  constructor(readonly options: IssuerOptions) {}

  /** The trusted consumer, or ERR_TENANT_UNKNOWN_CONSUMER. */
  async trusted(consumerClusterID: string, path: string): Promise<TrustedConsumer> {
    const consumer = await this.options.trust.get(consumerClusterID);
    if (consumer === undefined) {
      throw tenantError(
        'ERR_TENANT_UNKNOWN_CONSUMER',
        `consumer cluster ${consumerClusterID} is not trusted by this issuer`,
        {
          path,
          hint: `the provider admin runs: clusterprofile issuer trust --cluster-id ${consumerClusterID} --public-key FILE --data-dir DIR`,
        },
      );
    }
    return consumer;
  }

  #subjectFor(consumer: TrustedConsumer): GrantedSubject {
    return grantedSubject(consumer.clusterID, this.options.groups, consumer.groups);
  }

  /**
   * POST /v1/nonces: a single-use nonce for a trusted consumer that proved possession of its registered key. Every
   * refusal (bad document, other provider, stale timestamp, unknown consumer, bad signature) happens before any
   * nonce is created or retired, so nobody but the consumer can spend its outstanding nonces.
   * `durable` for the CLI (exits right after).
   */
  async issueNonce(body: unknown, durable = false): Promise<NonceResponse> {
    let consumerForLog = '?';
    try {
      const request = assertDocument<NonceRequest>('tenant-cert-nonce-request', body, {
        code: 'ERR_TENANT_INVALID_DOCUMENT',
        what: 'the nonce request',
      });
      consumerForLog = request.consumerClusterID;
      if (request.providerClusterID !== this.options.providerClusterID) {
        throw tenantError(
          'ERR_TENANT_PROVIDER_MISMATCH',
          `the nonce request is for provider ${request.providerClusterID}; this issuer is ${this.options.providerClusterID}`,
          {
            path: '$.providerClusterID',
          },
        );
      }
      checkNonceRequestTime(request.timestamp, this.options.now());
      const consumer = await this.trusted(request.consumerClusterID, '$.consumerClusterID');
      checkNonceRequestSignature(request, this.options.providerClusterID, consumer.publicKey);
      // The replay memory is keyed by what the signature covers, not by the signature bytes (an ECDSA signature can be
      // re-encoded into another valid one), and kept until the timestamp leaves the window (then the stale check
      // refuses a replay). Only verified requests are recorded: its size is bounded by what trusted consumers send.
      const answered = {
        key: `${request.consumerClusterID} ${request.timestamp}`,
        untilMs: Date.parse(request.timestamp) + NONCE_REQUEST_MAX_SKEW_MS,
      };
      return await this.nonceFor(consumer, this.options.nonceTtlMs, durable, answered);
    } catch (error) {
      this.options.log?.(`nonce request ${consumerForLog}: refused ${describe(error)}`);
      throw error;
    }
  }

  /**
   * A nonce for `consumer`. `request`: the signed nonce request it answers; with the data dir a request answered
   * before is ERR_TENANT_NONCE_REQUEST_REPLAYED (a captured request sent again inside its window would otherwise still
   * rotate the consumer's nonces); the Kubernetes state, which retires nothing, answers it (./state/kubernetes/kubernetes-state.ts).
   */
  async nonceFor(
    consumer: TrustedConsumer,
    ttlMs: number,
    durable: boolean,
    request?: AnsweredRequest,
  ): Promise<NonceResponse> {
    const issued = await this.options.nonces.issue(consumer.clusterID, ttlMs, this.options.now(), {
      durable,
      ...(request === undefined ? {} : { request }),
    });
    if (issued === 'replayed') {
      throw tenantError(
        'ERR_TENANT_NONCE_REQUEST_REPLAYED',
        'a nonce request of this consumer with this timestamp was already answered (a request is good for one nonce)',
        {
          path: '$.signature',
          hint: 'sign a new request',
        },
      );
    }
    const { nonce, expiresAt } = issued;
    this.options.log?.(`nonce issued for ${consumer.clusterID}, expires ${expiresAt.toISOString()}`);
    return {
      nonce,
      expiresAt: expiresAt.toISOString(),
      providerClusterID: this.options.providerClusterID,
      consumerClusterID: consumer.clusterID,
      subject: this.#subjectFor(consumer),
    };
  }

  /** POST /v1/tenants: every check, then the signer; the answer in the Tenant's flavour. */
  async acceptTenant(body: unknown): Promise<AcceptedTenant> {
    let consumerForLog = '?';
    try {
      const tenant = await readTenant(body);
      consumerForLog = tenant.consumerClusterID;
      const accepted = await this.#accept(tenant);
      this.options.log?.(
        `tenant ${tenant.consumerClusterID}: certificate issued, valid until ${accepted.notAfter.toISOString()}`,
      );
      return accepted;
    } catch (error) {
      this.options.log?.(`tenant ${consumerForLog}: refused ${describe(error)}`);
      throw error;
    }
  }

  async #accept(tenant: ReceivedTenant): Promise<AcceptedTenant> {
    const { options } = this;
    if (!options.liqoCompat && (tenant.flavour === 'liqo' || tenant.signatureFormat === 'liqo-nonce')) {
      throw tenantError(
        'ERR_TENANT_LIQO_COMPAT_DISABLED',
        "a signature over the nonce alone (Liqo's) binds no context; this issuer requires context-v1",
        {
          path: tenant.flavour === 'liqo' ? '$.apiVersion' : '$.spec.signatureFormat',
          hint: 'use clusterprofile tenant generate, or start the issuer with --liqo-compat',
        },
      );
    }
    if (tenant.providerClusterID !== undefined && tenant.providerClusterID !== options.providerClusterID) {
      throw tenantError(
        'ERR_TENANT_PROVIDER_MISMATCH',
        `the Tenant is for provider ${tenant.providerClusterID}; this issuer is ${options.providerClusterID}`,
        {
          path: '$.spec.providerClusterID',
        },
      );
    }
    const consumer = await this.trusted(tenant.consumerClusterID, '$.spec.clusterID');
    const now = options.now();

    // Freshness: find the nonce, check it, spend it durably before anything else is judged.
    let nonce: string;
    if (tenant.nonce !== undefined) {
      nonce = tenant.nonce;
    } else {
      // Liqo: which outstanding nonce was signed? Try each (with the Tenant's key, which must be the trusted one).
      checkKeys(tenant, consumer.publicKey);
      const candidates = await options.nonces.outstanding(consumer.clusterID, now);
      const found = candidates.find((candidate) =>
        verifyTenant(
          tenant.publicKey,
          {
            providerClusterID: options.providerClusterID,
            consumerClusterID: consumer.clusterID,
            nonce: candidate,
            csrDer: tenant.csr.der,
          },
          tenant.signature,
          'liqo-nonce',
        ),
      );
      if (found === undefined) {
        throw candidates.length === 0
          ? tenantError('ERR_TENANT_NONCE_UNKNOWN', `there is no outstanding nonce for ${consumer.clusterID}`, {
              path: '$.spec.signature',
              hint: 'issue a nonce (clusterprofile tenant nonce) and sign that one',
            })
          : tenantError(
              'ERR_TENANT_SIGNATURE_INVALID',
              `the signature does not verify over any outstanding nonce of ${consumer.clusterID}`,
              {
                path: '$.spec.signature',
              },
            );
      }
      nonce = found;
    }
    await options.nonces.take(nonce, consumer.clusterID, now);

    // Proof of possession and what is asked for.
    checkKeys(tenant, consumer.publicKey);
    checkSignature(tenant, options.providerClusterID, nonce);
    const subject = this.#subjectFor(consumer);
    checkCsr(tenant.csr, subject, {
      exactGroups: options.signer.copiesCsrSubject,
      ...(options.liqoCompat ? { tolerate: ['liqo.io'] } : {}),
    });

    // Sign.
    const notBefore = new Date(now.getTime() - (options.backdateMs ?? 300_000));
    const notAfter = new Date(now.getTime() + options.certLifetimeMs);
    const certificatePem = await options.signer.sign({
      consumerClusterID: consumer.clusterID,
      csr: tenant.csr,
      subject,
      notBefore,
      notAfter,
    });
    const certificate = checkIssued(certificatePem, tenant, subject);

    // The consumer's own proxy (a Liqo Tenant names it) wins over the issuer's, as at Liqo's provider.
    const proxyURL = tenant.proxyURL ?? options.proxyURL;
    const input = {
      providerClusterID: options.providerClusterID,
      consumerClusterID: consumer.clusterID,
      certificatePem,
      notBefore: new Date(certificate.validFrom),
      notAfter: new Date(certificate.validTo),
      ...(options.apiServer === undefined ? {} : { apiServer: options.apiServer }),
      ...(options.apiServerCaPem === undefined ? {} : { apiServerCaPem: options.apiServerCaPem }),
      ...(proxyURL === undefined ? {} : { proxyURL }),
    };
    return {
      identity: tenant.flavour === 'liqo' ? buildLiqoIdentity(input) : buildIdentity(input),
      certificatePem,
      consumerClusterID: consumer.clusterID,
      notAfter: input.notAfter,
    };
  }
}

/**
 * One log line's worth of an error: `CODE: message` with the details a client is not told (file paths, the API
 * server's answers), on one line.
 */
export function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  const path = (error as { path?: unknown } | null)?.path;
  const text = `${typeof code === 'string' && code.startsWith('ERR_') ? code : 'ERR_ISSUER_INTERNAL'}: ${message}${typeof path === 'string' ? ` (at ${path})` : ''}`;
  return text.replace(/[\r\n]+/g, ' ');
}

/** What a signer returned is a certificate for the Tenant's key and the granted CN (guards the Kubernetes path). */
function checkIssued(certificatePem: string, tenant: ReceivedTenant, subject: GrantedSubject): X509Certificate {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certificatePem);
  } catch (cause) {
    throw tenantError('ERR_ISSUER_SIGNER_FAILED', 'the signer returned something that is not a certificate', { cause });
  }
  if (
    !samePublicKey(certificate.publicKey, tenant.publicKey) ||
    !certificate.subject.split('\n').includes(`CN=${subject.commonName}`)
  ) {
    throw tenantError('ERR_ISSUER_SIGNER_FAILED', 'the signer returned a certificate for another key or subject');
  }
  return certificate;
}
