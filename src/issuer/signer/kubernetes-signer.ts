/**
 * Signer (b): the Kubernetes CSR API (certificates.k8s.io/v1). For every accepted Tenant:
 * 1. create a CertificateSigningRequest — signerName `kubernetes.io/kube-apiserver-client`, the consumer's CSR,
 *    `expirationSeconds` = the issuer's lifetime (Kubernetes minimum 600), usages digital signature + client auth
 *    (+ key encipherment for RSA keys);
 * 2. approve it through the `/approval` subresource (condition Approved, reason ClusterProfileIssuerApproved) — the
 *    issuer made every check, so it approves exactly what it checked;
 * 3. poll until `status.certificate` appears, a Denied/Failed condition shows, or the deadline (default 30 s) passes;
 * 4. delete the object (best effort).
 * The API server's signer copies the CSR's subject, so with this signer a CSR must ask for exactly the granted
 * subject (`copiesCsrSubject`). RBAC it needs: deploy/overlays/csr-signer/issuer-rbac.yaml.
 *
 * Requests are built and responses processed by pure functions; they are sent through the package's one Kubernetes
 * client (src/kube/kube-client.ts), kept for the issuer's life: a rotated service-account token or kubeconfig
 * credential file is read again within a minute and after a 401.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { KubeClient } from '../../kube/kube-client.js';
import { statusMessage } from '../../kube/status.js';
import type { KubeRequest, KubeResponse, SendKubeRequest } from '../../kube/types.js';
import type { Env } from '../../base/io.js';
import { csrPem } from '../../wire/tenant-cert/csr.js';
import { tenantError } from '../../wire/tenant-cert/protocol.js';
import type { IssuerSettings } from '../settings.js';
import type { SignRequest, Signer } from './signer.js';

export const SIGNER_NAME = 'kubernetes.io/kube-apiserver-client';
const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
/** The smallest expirationSeconds the API server honours. */
export const MIN_EXPIRATION_SECONDS = 600;

interface CsrObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; resourceVersion?: string; [key: string]: unknown };
  spec?: Record<string, unknown>;
  status?: {
    certificate?: string;
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string; [key: string]: unknown }>;
  };
}

export function buildCreateRequest(name: string, request: SignRequest, now: Date): KubeRequest {
  const expirationSeconds = Math.max(
    MIN_EXPIRATION_SECONDS,
    Math.ceil((request.notAfter.getTime() - now.getTime()) / 1000),
  );
  const usages = [
    'digital signature',
    ...(request.csr.publicKey.asymmetricKeyType === 'rsa' ? ['key encipherment'] : []),
    'client auth',
  ];
  return {
    method: 'POST',
    path: CSR_PATH,
    body: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name, labels: { 'credentials.clusterprofile.io/consumer-cluster-id': request.consumerClusterID } },
      spec: {
        request: Buffer.from(csrPem(request.csr.der)).toString('base64'),
        signerName: SIGNER_NAME,
        expirationSeconds,
        usages,
      },
    },
  };
}

export function buildApprovalRequest(created: CsrObject, consumerClusterID: string, now: Date): KubeRequest {
  const name = created.metadata?.name ?? '';
  const conditions = [
    ...(created.status?.conditions ?? []),
    {
      type: 'Approved',
      status: 'True',
      reason: 'ClusterProfileIssuerApproved',
      message: `consumer cluster ${consumerClusterID} proved possession of its trusted key over a fresh nonce`,
      lastUpdateTime: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    },
  ];
  return {
    method: 'PUT',
    path: `${CSR_PATH}/${encodeURIComponent(name)}/approval`,
    body: { ...created, status: { ...created.status, conditions } },
  };
}

function failure(response: KubeResponse, what: string): Error {
  const message = statusMessage(response.body);
  const detail = message === undefined ? '' : `: ${message}`;
  if (response.status === 401 || response.status === 403) {
    return tenantError(
      'ERR_ISSUER_SIGNER_DENIED',
      `the API server refused to ${what} (HTTP ${response.status})${detail}`,
      {
        hint: "the issuer's identity needs the RBAC of deploy/overlays/csr-signer/issuer-rbac.yaml",
      },
    );
  }
  return tenantError('ERR_ISSUER_SIGNER_FAILED', `the API server could not ${what} (HTTP ${response.status})${detail}`);
}

export function processCreateResponse(response: KubeResponse): CsrObject {
  if (response.status !== 201 && response.status !== 200) {
    throw failure(response, 'create a CertificateSigningRequest');
  }
  return response.body as CsrObject;
}

export function processApprovalResponse(response: KubeResponse): void {
  if (response.status !== 200 && response.status !== 201) {
    throw failure(response, 'approve the CertificateSigningRequest');
  }
}

/** The certificate PEM when issued, undefined while pending; throws on Denied/Failed. */
export function processPollResponse(response: KubeResponse): string | undefined {
  if (response.status !== 200) {
    throw failure(response, 'read the CertificateSigningRequest');
  }
  const object = response.body as CsrObject;
  for (const condition of object.status?.conditions ?? []) {
    if ((condition.type === 'Denied' || condition.type === 'Failed') && condition.status !== 'False') {
      throw tenantError(
        condition.type === 'Denied' ? 'ERR_ISSUER_SIGNER_DENIED' : 'ERR_ISSUER_SIGNER_FAILED',
        `the CertificateSigningRequest was ${condition.type.toLowerCase()}: ${condition.reason ?? ''} ${condition.message ?? ''}`.trim(),
      );
    }
  }
  const certificate = object.status?.certificate;
  if (typeof certificate === 'string' && certificate !== '') {
    return Buffer.from(certificate, 'base64').toString('utf8');
  }
  return undefined;
}

export interface KubernetesSignerOptions {
  /** The connection for one signing (closed after it). */
  connect(): Promise<{ send: SendKubeRequest; close(): Promise<void> }>;
  now(): Date;
  /** How long to wait for the certificate (default 30 s). */
  timeoutMs?: number;
  pollIntervalMs?: number;
}

export function kubernetesSigner(options: KubernetesSignerOptions): Signer {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const pollIntervalMs = options.pollIntervalMs ?? 250;
  return {
    name: 'kubernetes',
    copiesCsrSubject: true,
    async sign(request, { signal } = {}) {
      const deadline = AbortSignal.timeout(timeoutMs);
      const combined = signal === undefined ? deadline : AbortSignal.any([signal, deadline]);
      const kube = await options.connect();
      const name = `clusterprofile-${request.consumerClusterID.slice(0, 200)}-${randomBytes(5).toString('hex')}`;
      let created = false;
      try {
        const object = processCreateResponse(
          await kube.send(buildCreateRequest(name, request, options.now()), { signal: combined }),
        );
        created = true;
        let approval = await kube.send(buildApprovalRequest(object, request.consumerClusterID, options.now()), {
          signal: combined,
        });
        if (approval.status === 409) {
          // Someone (a controller) updated the object in between: approve the current version, once.
          const current = await kube.send({ method: 'GET', path: `${CSR_PATH}/${name}` }, { signal: combined });
          if (current.status === 200) {
            approval = await kube.send(
              buildApprovalRequest(current.body as CsrObject, request.consumerClusterID, options.now()),
              { signal: combined },
            );
          }
        }
        processApprovalResponse(approval);
        for (;;) {
          const certificate = processPollResponse(
            await kube.send({ method: 'GET', path: `${CSR_PATH}/${name}` }, { signal: combined }),
          );
          if (certificate !== undefined) {
            return certificate;
          }
          await delay(pollIntervalMs, undefined, { signal: combined });
        }
      } catch (error) {
        if (deadline.aborted) {
          throw tenantError(
            'ERR_ISSUER_SIGNER_TIMEOUT',
            `no certificate for CertificateSigningRequest ${name} within ${timeoutMs / 1000}s`,
            {
              hint: `is a signer for ${SIGNER_NAME} running (kube-controller-manager's csrsigning controller)? EKS has none`,
              cause: error,
            },
          );
        }
        if ((error as { code?: unknown }).code === 'ERR_KUBE_UNREACHABLE') {
          throw tenantError('ERR_ISSUER_SIGNER_FAILED', `the API server is unreachable: ${(error as Error).message}`, {
            cause: error,
          });
        }
        throw error;
      } finally {
        if (created) {
          await kube.send({ method: 'DELETE', path: `${CSR_PATH}/${name}` }).catch(() => undefined);
        }
        await kube.close();
      }
    },
  };
}

/**
 * The signer's identity from `--kubeconfig` (with `--context`), else KUBECONFIG (merged), else the pod's service
 * account, else ~/.kube/config (src/kube/kubeconfig-loader.ts).
 */
export async function kubernetesSignerFromSettings(
  settings: IssuerSettings,
  deps: { env: Env; now(): Date; cwd: string },
): Promise<Signer> {
  if (settings.certLifetimeMs < MIN_EXPIRATION_SECONDS * 1000) {
    throw tenantError(
      'ERR_ISSUER_SIGNER_FAILED',
      `the Kubernetes signer issues certificates for at least ${MIN_EXPIRATION_SECONDS}s; raise --cert-lifetime`,
    );
  }
  // One client for the issuer's life: its kept-alive connection serves every signing, and a rotated token or
  // certificate file (a pod's service account) is read again within a minute and after a 401.
  const client = await KubeClient.load(
    { kubeconfig: settings.kubeconfig, context: settings.kubeContext, flag: '--kubeconfig' },
    { env: deps.env, cwd: deps.cwd },
    { timeoutMs: 10_000 },
  );
  const signer = kubernetesSigner({
    // Each signing "closes" its connection: the client's stays for the next one.
    connect: async () => ({ send: client.send, close: async () => undefined }),
    now: deps.now,
    ...(settings.signerTimeoutMs === undefined ? {} : { timeoutMs: settings.signerTimeoutMs }),
  });
  return { ...signer, close: () => client.close() };
}
