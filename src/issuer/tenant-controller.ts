/**
 * The declarative flow, provider side: a reconciler run by `clusterprofile issuer serve --reconcile-tenants`. It lists
 * and watches the Tenant resources of one namespace and answers each new spec generation once, through the same
 * {@link Issuer} as the HTTPS API (so the same trust records, nonce store, replay memory, checks and signer):
 *
 * 1. a spec with a signed `nonceRequest` → {@link Issuer.issueNonce} → `status.nonce` (value, expiry, granted subject),
 *    condition Ready=False reason `NonceIssued`;
 * 2. a spec with `nonce`, `publicKey`, `csr`, `signature` (ours), or Liqo's spec without nonce (with `--liqo-compat`)
 *    → {@link Issuer.acceptTenant} → an Identity resource (owned by the Tenant) and its kubeconfig Secret (owned by
 *    the Identity), `status.identityRef`, `notAfter`, `renewAfter`, condition Ready=True reason `Issued`;
 * 3. any refusal → condition Ready=False with the error code as reason and the message a client of the HTTPS API would
 *    get (the same disclosure policy: internal details go to the log only); nothing is written besides the status.
 *
 * A nonce found spent (ERR_TENANT_NONCE_REUSED) is written as a refusal only after a grace period, and only if no
 * other replica answered that generation meanwhile (two replicas reconcile the same Tenants; see REUSED_GRACE_MS).
 *
 * Idempotent: `status.observedGeneration` records the generation answered; a generation is never answered twice (the
 * nonce it carried is spent anyway). If the issuer stopped between writing the Identity and the status, the Identity's
 * annotations (Tenant uid and generation) say it was answered and only the status is written.
 *
 * The Secret holds `kubeconfig` (cluster and the user's client certificate, without `client-key-data`: the private key
 * never leaves the consumer, which adds it), `tls.crt` and `ca.crt`.
 */
import type { LoopReport } from './background.js';
import { X509Certificate } from 'node:crypto';
import type { KubeClient } from '../kube/kube-client.js';
import type { SendKubeRequest } from '../kube/types.js';
import { listAndWatch, type StreamGet } from '../kube/watch.js';
import { assertDocument } from '../schemas/index.js';
import { encodeBase64 } from '../wire/tenant-cert/keys.js';
import { API_VERSION, tenantError, type AuthParams } from '../wire/tenant-cert/protocol.js';
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  READY,
  TENANT_GENERATION_ANNOTATION,
  TENANT_UID_ANNOTATION,
  identitiesPath,
  identityPath,
  secretPath,
  secretsPath,
  tenantDocumentOf,
  tenantPath,
  tenantStep,
  tenantsPath,
  type IdentityResource,
  type TenantCondition,
  type TenantResource,
  type TenantStatus,
} from '../wire/tenant-cert/resources.js';
import { kubeCall } from '../kube/tenant-flow-call.js';
import { describe, type AcceptedTenant, type Issuer } from './issuer.js';
import { errorAnswer } from './server.js';

export interface TenantControllerOptions {
  issuer: Issuer;
  namespace: string;
  /** Requests of the reconciler (a few kB, retried). */
  send: SendKubeRequest;
  /** The list of the watch. */
  watchSend: SendKubeRequest;
  /** The watch's stream (default: over `watchSend`, see src/kube/watch.ts). */
  watchStream?: StreamGet;
  /** The watch's server-side timeout; default 300 to 600 s (jittered). */
  watchTimeoutSeconds?: number;
  /** The API server put in kubeconfigs when the issuer has no --api-server-url/--api-server-ca: the one watched. */
  apiServer?: string;
  apiServerCaPem?: string;
  now(): Date;
  /** Where the reconciler reports its lists, watches and status writes (`issuer serve`: logged, counted, readiness). */
  report?: LoopReport;
  log?(line: string): void;
  /**
   * Runs `check` after `ms` (the running controller: a timer cancelled on stop). A Tenant refused as
   * ERR_TENANT_NONCE_REUSED is written through it, after {@link REUSED_GRACE_MS}: see {@link reconcile}. Without it
   * (a single reconcile call), the refusal is written at once.
   */
  later?(check: () => Promise<void>, ms: number): void;
}

/**
 * How long a replica that found a Tenant's nonce spent waits before it writes that refusal. Two replicas reconcile
 * the same generation; the one that spent the nonce still signs and writes the Identity, the Secret and then the
 * status, while the other learns at once that the nonce is spent. Written at once, its refusal would show for that
 * moment (a consumer polling the status could take it as the answer).
 */
export const REUSED_GRACE_MS = 5000;

export interface RunningTenantController {
  /** Stops watching; waits for the Tenant being answered. */
  stop(): Promise<void>;
}

/** The kubeconfig Secret of an Identity. */
export const kubeconfigSecretName = (identity: string): string => `kubeconfig-${identity}`;

/**
 * Starts the reconciler over `client` (the issuer's `--kubeconfig`/`--context`, or its ServiceAccount: a rotated
 * token is read again within a minute and after a 401, see src/kube/kube-client.ts). Requests are retried on
 * transient failures; the watch streams through the same client.
 */
export function startTenantControllerFor(
  client: KubeClient,
  options: Omit<TenantControllerOptions, 'send' | 'watchSend' | 'watchStream'>,
): RunningTenantController {
  const { endpoint } = client.access;
  const running = startTenantController({
    ...options,
    send: client.send,
    watchSend: client.send,
    watchStream: (path, onChunk, streamOptions) => client.stream(path, onChunk, streamOptions),
    ...(options.apiServer === undefined ? { apiServer: endpoint.server } : {}),
    ...(options.apiServerCaPem === undefined && endpoint.caPem !== undefined ? { apiServerCaPem: endpoint.caPem } : {}),
  });
  return {
    async stop() {
      await running.stop();
      await client.close();
    },
  };
}

export function startTenantController(options: TenantControllerOptions): RunningTenantController {
  const stop = new AbortController();
  const pending = new Set<NodeJS.Timeout>();
  const checks = new Set<Promise<void>>();
  const later = (check: () => Promise<void>, ms: number): void => {
    const timer = setTimeout(() => {
      pending.delete(timer);
      const running = check()
        .catch((error: unknown) => {
          if (!stop.signal.aborted)
            options.log?.(`tenant ${options.namespace}: a deferred refusal was not written: ${describe(error)}`);
        })
        .finally(() => checks.delete(running));
      checks.add(running);
    }, ms);
    pending.add(timer);
  };
  const reconciling: TenantControllerOptions = { later, ...options };
  const loop = listAndWatch<TenantResource>({
    send: options.watchSend,
    ...(options.watchStream === undefined ? {} : { stream: options.watchStream }),
    path: tenantsPath(options.namespace),
    signal: stop.signal,
    pageSize: 500,
    ...(options.watchTimeoutSeconds === undefined ? {} : { timeoutSeconds: options.watchTimeoutSeconds }),
    ...(options.log === undefined ? {} : { log: options.log }),
    ...(options.report === undefined ? {} : { report: options.report }),
    onEvent: async (type, tenant) => {
      if (type === 'DELETED') return; // the garbage collector removes its Identity and Secret (owner references)
      try {
        await reconcile(reconciling, tenant, stop.signal);
      } catch (error) {
        // Only the API server failing us gets here (a status that cannot be written): the next event or relist retries.
        if (!stop.signal.aborted) {
          options.log?.(
            `tenant ${options.namespace}/${tenant.metadata?.name ?? '?'}: not answered: ${describe(error)}`,
          );
          options.report?.failed(error);
        }
      }
    },
  });
  return {
    async stop() {
      stop.abort();
      for (const timer of pending) clearTimeout(timer);
      pending.clear();
      await loop;
      await Promise.all(checks);
    },
  };
}

function condition(
  previous: TenantStatus | undefined,
  next: Omit<TenantCondition, 'lastTransitionTime'>,
  now: Date,
): TenantCondition {
  const before = previous?.conditions?.find((item) => item.type === next.type);
  const same = before !== undefined && before.status === next.status && before.reason === next.reason;
  return { ...next, lastTransitionTime: same ? before.lastTransitionTime : now.toISOString() };
}

/** Answers one Tenant (see the module comment); throws only when the status cannot be written. */
export async function reconcile(
  options: TenantControllerOptions,
  tenant: TenantResource,
  signal?: AbortSignal,
): Promise<void> {
  const name = tenant.metadata?.name;
  if (name === undefined || tenant.metadata.deletionTimestamp !== undefined) return;
  const generation = tenant.metadata.generation ?? 0;
  if (tenant.status?.observedGeneration === generation) return;
  const where = `tenant ${options.namespace}/${name} (generation ${generation})`;
  const now = options.now();
  const previous = tenant.status;
  let status: Record<string, unknown>;
  let refused = false;
  let reused = false;
  try {
    assertDocument<TenantResource>('tenant-resource', tenant, {
      code: 'ERR_TENANT_INVALID_DOCUMENT',
      what: 'the Tenant resource',
    });
    const step = tenantStep(tenant.spec);
    if (step === 'tenant') {
      const answered = await answerTenant(options, tenant, signal);
      status = {
        observedGeneration: generation,
        nonce: null,
        identityRef: { name: answered.identity },
        kubeconfigSecretRef: { name: answered.secret },
        notBefore: answered.notBefore.toISOString(),
        notAfter: answered.notAfter.toISOString(),
        renewAfter: new Date(
          answered.notBefore.getTime() + ((answered.notAfter.getTime() - answered.notBefore.getTime()) * 2) / 3,
        ).toISOString(),
        conditions: [
          condition(
            previous,
            {
              type: READY,
              status: 'True',
              reason: 'Issued',
              message: `Identity ${answered.identity} holds a certificate valid until ${answered.notAfter.toISOString()}`,
              observedGeneration: generation,
            },
            now,
          ),
        ],
      };
      options.log?.(`${where}: answered with Identity ${answered.identity} and Secret ${answered.secret}`);
    } else if (step === 'nonce-request') {
      const request = tenant.spec.nonceRequest!;
      if (tenant.spec.providerClusterID === undefined) {
        throw tenantError(
          'ERR_TENANT_INVALID_DOCUMENT',
          'a nonce request names the provider it is for: spec.providerClusterID is required',
          { path: '$.spec.providerClusterID' },
        );
      }
      const nonce = await options.issuer.issueNonce({
        consumerClusterID: tenant.spec.clusterID,
        providerClusterID: tenant.spec.providerClusterID,
        timestamp: request.timestamp,
        signature: request.signature,
      });
      status = {
        observedGeneration: generation,
        nonce: { value: nonce.nonce, expiresAt: nonce.expiresAt, subject: nonce.subject },
        conditions: [
          condition(
            previous,
            {
              type: READY,
              status: 'False',
              reason: 'NonceIssued',
              message: `sign status.nonce into spec (nonce, publicKey, csr, signature) before ${nonce.expiresAt}`,
              observedGeneration: generation,
            },
            now,
          ),
        ],
      };
    } else {
      throw tenantError(
        'ERR_TENANT_INVALID_DOCUMENT',
        'the spec holds neither a nonceRequest (step 1) nor a signed Tenant: nonce, publicKey, csr, signature (step 2)',
        { path: '$.spec' },
      );
    }
  } catch (error) {
    if (signal?.aborted === true) return;
    const { body } = errorAnswer(error);
    options.log?.(`${where}: refused ${describe(error)}`);
    refused = true;
    reused = body.code === 'ERR_TENANT_NONCE_REUSED';
    status = {
      observedGeneration: generation,
      nonce: null,
      conditions: [
        condition(
          previous,
          {
            type: READY,
            status: 'False',
            reason: body.code,
            message: `${body.message}${body.path === undefined ? '' : ` (at ${body.path})`}${body.hint === undefined ? '' : `; ${body.hint}`}`,
            observedGeneration: generation,
          },
          now,
        ),
      ],
    };
  }
  if (refused && reused && options.later !== undefined) {
    // Another replica may have spent it for this very generation and be writing its answer: look again later.
    const refusal = status;
    options.later(async () => {
      const found = await kubeCall(
        options.send,
        { method: 'GET', path: tenantPath(options.namespace, name) },
        [200, 404],
        `reading ${where}`,
        signal,
      );
      const current = found.status === 200 ? (found.body as TenantResource) : undefined;
      if (
        current === undefined ||
        current.metadata.uid !== tenant.metadata.uid ||
        current.metadata.generation !== generation
      )
        return;
      if (current.status?.observedGeneration === generation) {
        options.log?.(`${where}: answered by another replica; its nonce-reused refusal is dropped`);
        return;
      }
      await writeStatus(options, name, refusal, current.metadata.resourceVersion, where, signal);
    }, REUSED_GRACE_MS);
    return;
  }
  // An answer (a nonce, a certificate) is written unconditionally: it is what the issuer did, and a concurrent change
  // of the spec (a new generation) is answered by its own event. A refusal is written only over the version it judged
  // (resourceVersion precondition): where another writer — a second issuer replica that spent the same nonce and
  // issued — answered in between, its answer stays.
  await writeStatus(options, name, status, refused ? tenant.metadata.resourceVersion : undefined, where, signal);
}

/** A merge patch of the status subresource; with `resourceVersion`, only over that version (a 409 is logged, not thrown). */
async function writeStatus(
  options: TenantControllerOptions,
  name: string,
  status: Record<string, unknown>,
  resourceVersion: string | undefined,
  where: string,
  signal?: AbortSignal,
): Promise<void> {
  const written = await kubeCall(
    options.send,
    {
      method: 'PATCH',
      path: `${tenantPath(options.namespace, name)}/status`,
      contentType: 'application/merge-patch+json',
      body: { ...(resourceVersion !== undefined ? { metadata: { resourceVersion } } : {}), status },
    },
    resourceVersion !== undefined ? [200, 409] : [200],
    `writing the status of ${where}`,
    signal,
  );
  if (written.status === 409)
    options.log?.(`${where}: the Tenant changed since; its refusal is not written over the newer version`);
}

interface Answered {
  identity: string;
  secret: string;
  notBefore: Date;
  notAfter: Date;
}

/** Step 2: the Identity and Secret for this generation, issued now or found written by an earlier run. */
async function answerTenant(
  options: TenantControllerOptions,
  tenant: TenantResource,
  signal?: AbortSignal,
): Promise<Answered> {
  const { namespace } = options;
  const identityName = tenant.metadata.name;
  const found = await kubeCall(
    options.send,
    { method: 'GET', path: identityPath(namespace, identityName) },
    [200, 404],
    `reading Identity ${namespace}/${identityName}`,
    signal,
  );
  const existing = found.status === 200 ? (found.body as IdentityResource) : undefined;
  const annotations = existing?.metadata.annotations;
  if (
    existing !== undefined &&
    annotations?.[TENANT_UID_ANNOTATION] === tenant.metadata.uid &&
    annotations?.[TENANT_GENERATION_ANNOTATION] === String(tenant.metadata.generation ?? 0)
  ) {
    const secret = kubeconfigSecretName(identityName);
    return {
      identity: identityName,
      secret,
      notBefore: new Date(existing.spec.notBefore),
      notAfter: new Date(existing.spec.notAfter),
    };
  }
  const accepted = await options.issuer.acceptTenant(tenantDocumentOf(tenant));
  return writeAnswer(options, tenant, accepted, existing, signal);
}

async function writeAnswer(
  options: TenantControllerOptions,
  tenant: TenantResource,
  accepted: AcceptedTenant,
  existing: IdentityResource | undefined,
  signal?: AbortSignal,
): Promise<Answered> {
  const { namespace } = options;
  const identityName = tenant.metadata.name;
  const secretName = kubeconfigSecretName(identityName);
  const certificate = new X509Certificate(accepted.certificatePem);
  const notBefore = new Date(certificate.validFrom);
  const notAfter = new Date(certificate.validTo);
  const answeredParams = accepted.identity.spec.authParams as AuthParams;
  const authParams: AuthParams = {
    ...answeredParams,
    ...(answeredParams.apiServer === undefined && options.apiServer !== undefined
      ? { apiServer: options.apiServer }
      : {}),
    ...(answeredParams.ca === undefined && options.apiServerCaPem !== undefined
      ? { ca: encodeBase64(options.apiServerCaPem) }
      : {}),
  };
  const providerClusterID = options.issuer.options.providerClusterID;
  const labels = { [MANAGED_BY_LABEL]: MANAGED_BY, 'liqo.io/remote-cluster-id': providerClusterID };
  const identity: IdentityResource = {
    apiVersion: API_VERSION,
    kind: 'Identity',
    metadata: {
      name: identityName,
      namespace,
      labels,
      annotations: {
        [TENANT_UID_ANNOTATION]: tenant.metadata.uid ?? '',
        [TENANT_GENERATION_ANNOTATION]: String(tenant.metadata.generation ?? 0),
      },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: 'Tenant',
          name: tenant.metadata.name,
          uid: tenant.metadata.uid ?? '',
          controller: true,
        },
      ],
      ...(existing?.metadata.resourceVersion === undefined
        ? {}
        : { resourceVersion: existing.metadata.resourceVersion }),
    },
    spec: {
      clusterID: providerClusterID,
      consumerClusterID: accepted.consumerClusterID,
      authParams,
      notBefore: notBefore.toISOString(),
      notAfter: notAfter.toISOString(),
    },
  };
  const written =
    existing === undefined
      ? await kubeCall(
          options.send,
          { method: 'POST', path: identitiesPath(namespace), body: identity },
          [201],
          `creating Identity ${namespace}/${identityName}`,
          signal,
        )
      : await kubeCall(
          options.send,
          { method: 'PUT', path: identityPath(namespace, identityName), body: identity },
          [200],
          `replacing Identity ${namespace}/${identityName}`,
          signal,
        );
  const identityUid = (written.body as IdentityResource).metadata.uid ?? '';

  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: providerClusterID,
        cluster: {
          ...(authParams.apiServer === undefined ? {} : { server: authParams.apiServer }),
          ...(authParams.ca === undefined ? {} : { 'certificate-authority-data': authParams.ca }),
          ...(authParams.proxyURL === undefined ? {} : { 'proxy-url': authParams.proxyURL }),
        },
      },
    ],
    // client-key-data is the consumer's to add: the private key never leaves it.
    users: [
      { name: accepted.consumerClusterID, user: { 'client-certificate-data': encodeBase64(accepted.certificatePem) } },
    ],
    contexts: [
      {
        name: `${accepted.consumerClusterID}@${providerClusterID}`,
        context: { cluster: providerClusterID, user: accepted.consumerClusterID },
      },
    ],
    'current-context': `${accepted.consumerClusterID}@${providerClusterID}`,
  };
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: secretName,
      namespace,
      labels,
      ownerReferences: [
        { apiVersion: API_VERSION, kind: 'Identity', name: identityName, uid: identityUid, controller: true },
      ],
    },
    data: {
      kubeconfig: encodeBase64(`${JSON.stringify(kubeconfig, null, 2)}\n`),
      'tls.crt': encodeBase64(accepted.certificatePem),
      // authParams.ca is already base64 of the PEM (the issuer's, or encodeBase64 of --api-server-ca above).
      ...(authParams.ca === undefined ? {} : { 'ca.crt': authParams.ca }),
    },
  };
  const created = await kubeCall(
    options.send,
    { method: 'POST', path: secretsPath(namespace), body: secret },
    [201, 409],
    `creating Secret ${namespace}/${secretName}`,
    signal,
  );
  if (created.status === 409) {
    // It exists (a renewal): replace it whole, ownership included.
    await kubeCall(
      options.send,
      { method: 'PUT', path: secretPath(namespace, secretName), body: secret },
      [200],
      `replacing Secret ${namespace}/${secretName}`,
      signal,
    );
  }
  await kubeCall(
    options.send,
    {
      method: 'PATCH',
      path: `${identityPath(namespace, identityName)}/status`,
      contentType: 'application/merge-patch+json',
      body: { status: { kubeconfigSecretRef: { name: secretName } } },
    },
    [200],
    `writing the status of Identity ${namespace}/${identityName}`,
    signal,
  );
  return { identity: identityName, secret: secretName, notBefore, notAfter };
}
