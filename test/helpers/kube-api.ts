/**
 * A local HTTPS server that implements the parts of the Kubernetes API the token-request provider uses, faithfully
 * enough to fail on a wrong request: TokenRequest (`POST .../serviceaccounts/{name}/token`, the real
 * authentication.k8s.io/v1 shape validated field by field, authorization per caller), Secrets (get / create /
 * update, for the Secret Reader and token sync), and `GET /api/v1/namespaces/{ns}/pods` that accepts only a live
 * minted token — so a test can prove a credential works at a given time. Time comes from `now()`, which tests
 * control.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startHttpsServer, type RecordedRequest, type TestCa, type TestHttpsServer } from './tls.js';

export interface MintedRecord {
  token: string;
  namespace: string;
  serviceAccount: string;
  audiences: string[];
  expiresAt: Date;
  boundObjectRef?: unknown;
}

export interface FakeKubeApiOptions {
  ca: TestCa;
  /** Trust client certificates from this CA (PEM) — e.g. a tenant-cert issuer's client-ca.crt. Default: `ca`. */
  clientCaPem?: string;
  now?: () => Date;
  /** Bearer tokens and client-certificate CNs allowed to mint tokens, per `namespace/serviceAccount`. */
  minters: Record<string, string[]>;
  /** Service accounts that exist, as `namespace/name`. */
  serviceAccounts: string[];
  /** The API server caps lifetimes like --service-account-max-token-expiration (default: no cap). */
  maxExpirationSeconds?: number;
  /** Callers allowed to read/write Secrets (bearer tokens or CNs). */
  secretUsers?: string[];
  /** Hub Secrets, `namespace/name` → data (plain strings, served base64). */
  secrets?: Record<string, Record<string, string>>;
  /** ClusterProfiles served by `GET /apis/multicluster.x-k8s.io/v1alpha1/namespaces/{ns}/clusterprofiles` (hub role). */
  profiles?: { metadata: { name: string; namespace?: string } }[];
  /** Force answers: a status code for the next N TokenRequests (e.g. 500 to test retries). */
  failNext?: { status: number; count: number };
}

export interface FakeKubeApi {
  url: string;
  server: TestHttpsServer;
  minted: MintedRecord[];
  secrets: Record<string, Record<string, string>>;
  options: FakeKubeApiOptions;
  close(): Promise<void>;
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }));
}

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

function caller(request: RecordedRequest): string | undefined {
  return request.bearer ?? request.clientCert?.subjectCN;
}

/** Why a TokenRequest body is not the real shape, or undefined when it is. */
export function tokenRequestProblem(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return 'body is not an object';
  const { apiVersion, kind, spec } = body as Record<string, unknown>;
  if (apiVersion !== 'authentication.k8s.io/v1') return `apiVersion ${String(apiVersion)}`;
  if (kind !== 'TokenRequest') return `kind ${String(kind)}`;
  if (typeof spec !== 'object' || spec === null) return 'no spec';
  const { audiences, expirationSeconds, boundObjectRef, ...rest } = spec as Record<string, unknown>;
  if (Object.keys(rest).length > 0) return `unknown spec fields ${Object.keys(rest).join(',')}`;
  if (!Array.isArray(audiences) || audiences.some((a) => typeof a !== 'string')) return 'spec.audiences';
  if (typeof expirationSeconds !== 'number' || !Number.isInteger(expirationSeconds)) return 'spec.expirationSeconds';
  if (expirationSeconds < 600) return 'spec.expirationSeconds: may not specify a duration less than 10 minutes';
  if (expirationSeconds > 2 ** 32) return 'spec.expirationSeconds: may not specify a duration larger than 2^32 seconds';
  if (boundObjectRef !== undefined) {
    const ref = boundObjectRef as Record<string, unknown>;
    if (!['Pod', 'Secret', 'Node'].includes(String(ref['kind'])) || typeof ref['name'] !== 'string')
      return 'spec.boundObjectRef';
  }
  return undefined;
}

export async function startFakeKubeApi(options: FakeKubeApiOptions): Promise<FakeKubeApi> {
  const now = options.now ?? (() => new Date());
  const minted: MintedRecord[] = [];
  const secrets = options.secrets ?? {};
  // Labels and annotations as written, served back like a real API server does.
  const secretMetadata: Record<string, { labels?: unknown; annotations?: unknown }> = {};
  const tokenPath = /^\/api\/v1\/namespaces\/([^/]+)\/serviceaccounts\/([^/]+)\/token$/;
  const secretPath = /^\/api\/v1\/namespaces\/([^/]+)\/secrets(?:\/([^/]+))?$/;
  const profilesPath = /^\/apis\/multicluster\.x-k8s\.io\/v1alpha1\/namespaces\/([^/]+)\/clusterprofiles$/;
  const podsPath = /^\/api\/v1\/namespaces\/([^/]+)\/pods$/;

  const handle = async (request: RecordedRequest, req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(request.url, 'https://x');
    const who = caller(request);
    let match = tokenPath.exec(url.pathname);
    if (match !== null && request.method === 'POST') {
      const [, namespace, name] = match as unknown as [string, string, string];
      const key = `${namespace}/${name}`;
      if (who === undefined) return status(res, 401, 'Unauthorized', 'Unauthorized');
      if (options.failNext !== undefined && options.failNext.count > 0) {
        options.failNext.count -= 1;
        return status(res, options.failNext.status, 'InternalError', 'injected failure');
      }
      if (!(options.minters[key] ?? []).includes(who)) {
        return status(
          res,
          403,
          'Forbidden',
          `serviceaccounts "${name}" is forbidden: User "${who}" cannot create resource "serviceaccounts/token" in API group "" in the namespace "${namespace}"`,
        );
      }
      if (!options.serviceAccounts.includes(key))
        return status(res, 404, 'NotFound', `serviceaccounts "${name}" not found`);
      const body = await readBody(req);
      const problem = tokenRequestProblem(body);
      if (problem !== undefined)
        return status(res, 422, 'Invalid', `TokenRequest.authentication.k8s.io "${name}" is invalid: ${problem}`);
      const spec = (body as { spec: { audiences: string[]; expirationSeconds: number; boundObjectRef?: unknown } })
        .spec;
      const seconds = Math.min(spec.expirationSeconds, options.maxExpirationSeconds ?? Infinity);
      const expiresAt = new Date(Math.floor(now().getTime() / 1000) * 1000 + seconds * 1000);
      const token = `sa.${randomBytes(18).toString('base64url')}`;
      minted.push({
        token,
        namespace,
        serviceAccount: name,
        audiences: spec.audiences,
        expiresAt,
        boundObjectRef: spec.boundObjectRef,
      });
      return json(res, 201, {
        kind: 'TokenRequest',
        apiVersion: 'authentication.k8s.io/v1',
        metadata: { name, namespace, creationTimestamp: null },
        spec: { ...spec, expirationSeconds: seconds },
        status: { token, expirationTimestamp: expiresAt.toISOString().replace(/\.\d{3}Z$/, 'Z') },
      });
    }
    match = secretPath.exec(url.pathname);
    if (match !== null) {
      const [, namespace, name] = match as unknown as [string, string, string | undefined];
      if (who === undefined) return status(res, 401, 'Unauthorized', 'Unauthorized');
      if (!(options.secretUsers ?? []).includes(who)) {
        return status(
          res,
          403,
          'Forbidden',
          `secrets is forbidden: User "${who}" cannot ${request.method === 'GET' ? 'get' : 'create'} resource "secrets" in API group "" in the namespace "${namespace}"`,
        );
      }
      if (request.method === 'GET' && name !== undefined) {
        const data = secrets[`${namespace}/${name}`];
        if (data === undefined) return status(res, 404, 'NotFound', `secrets "${name}" not found`);
        const encoded = Object.fromEntries(
          Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
        );
        return json(res, 200, {
          kind: 'Secret',
          apiVersion: 'v1',
          metadata: { name, namespace, ...secretMetadata[`${namespace}/${name}`] },
          type: 'Opaque',
          data: encoded,
        });
      }
      if (request.method === 'POST' || request.method === 'PUT') {
        const body = (await readBody(req)) as {
          metadata?: { name?: string; labels?: unknown; annotations?: unknown };
          data?: Record<string, string>;
          stringData?: Record<string, string>;
        };
        const target = name ?? body.metadata?.name;
        if (target === undefined) return status(res, 422, 'Invalid', 'metadata.name required');
        const key = `${namespace}/${target}`;
        if (request.method === 'POST' && secrets[key] !== undefined)
          return status(res, 409, 'AlreadyExists', `secrets "${target}" already exists`);
        if (request.method === 'PUT' && secrets[key] === undefined)
          return status(res, 404, 'NotFound', `secrets "${target}" not found`);
        const decoded = Object.fromEntries(
          Object.entries(body.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
        );
        secrets[key] = { ...decoded, ...(body.stringData ?? {}) };
        secretMetadata[key] = { labels: body.metadata?.labels, annotations: body.metadata?.annotations };
        return json(res, request.method === 'POST' ? 201 : 200, {
          kind: 'Secret',
          apiVersion: 'v1',
          metadata: { name: target, namespace },
        });
      }
    }
    match = profilesPath.exec(url.pathname);
    if (match !== null && request.method === 'GET') {
      if (who === undefined || !(options.secretUsers ?? []).includes(who))
        return status(res, 403, 'Forbidden', 'clusterprofiles is forbidden');
      const items = (options.profiles ?? []).filter(
        (profile) => (profile.metadata.namespace ?? match![1]) === match![1],
      );
      return json(res, 200, {
        kind: 'ClusterProfileList',
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        metadata: {},
        items,
      });
    }
    match = podsPath.exec(url.pathname);
    if (match !== null && request.method === 'GET') {
      const record = minted.find((entry) => entry.token === request.bearer);
      if (record === undefined || record.expiresAt.getTime() <= now().getTime())
        return status(res, 401, 'Unauthorized', 'Unauthorized');
      if (record.namespace !== match[1]) {
        return status(
          res,
          403,
          'Forbidden',
          `pods is forbidden: User "system:serviceaccount:${record.namespace}:${record.serviceAccount}" cannot list resource "pods"`,
        );
      }
      return json(res, 200, {
        kind: 'PodList',
        apiVersion: 'v1',
        items: [],
        user: `system:serviceaccount:${record.namespace}:${record.serviceAccount}`,
      });
    }
    return status(res, 404, 'NotFound', 'the server could not find the requested resource');
  };

  const server = await startHttpsServer({
    ca: options.ca,
    clientCert: 'optional',
    ...(options.clientCaPem === undefined ? {} : { clientCaPem: options.clientCaPem }),
    handler: (request, req, res) => {
      handle(request, req, res).catch((error: unknown) => status(res, 500, 'InternalError', String(error)));
    },
  });
  return { url: server.url, server, minted, secrets, options, close: () => server.close() };
}
