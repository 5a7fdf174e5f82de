/**
 * A local HTTPS server implementing the certificates.k8s.io/v1 CertificateSigningRequest endpoints the issuer's
 * Kubernetes signer uses, with the API server's observable behaviour: bearer-token authentication (401), RBAC
 * outcomes (403 Status documents for create / approve), validation (422 for expirationSeconds < 600, a missing
 * signerName, a request that is not a PEM CSR), AlreadyExists (409), optimistic concurrency on /approval (409 on a
 * stale resourceVersion), and a kube-controller-manager-like signer for kubernetes.io/kube-apiserver-client that
 * signs approved requests after a delay: subject and SANs copied from the CSR, NotAfter = expirationSeconds, usages
 * checked (Failed condition otherwise). The signer uses @peculiar/x509, not the issuer's own DER code.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { webcrypto } from 'node:crypto';
import { x509 } from '../../src/wire/tenant-cert/x509.js';
import { createTestCa } from './tls.js';

const BASE = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client';

export interface FakeCsrApiOptions {
  token: string;
  /** The token may create CSRs (RBAC). Default true. */
  canCreate?: boolean;
  /** The token may approve for the signer (RBAC signers/approve). Default true. */
  canApprove?: boolean;
  /** Whether a signer controller runs. Default true. */
  signerRunning?: boolean;
  signDelayMs?: number;
  /** Bump the object's resourceVersion right after creation once (a controller touching it): the first approval conflicts. */
  touchAfterCreate?: boolean;
}

export interface FakeCsrApi {
  url: string;
  caPem: string;
  /** The cluster CA the fake signer issues from (what --client-ca-file would hold). */
  clusterCaPem: string;
  objects: Map<string, Record<string, any>>;
  deleted: string[];
  requests: Array<{ method: string; path: string }>;
  close(): Promise<void>;
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  const body = JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  });
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(body);
}

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

export async function startFakeCsrApi(options: FakeCsrApiOptions): Promise<FakeCsrApi> {
  const tls = await createTestCa('fake-apiserver-ca');
  const serving = await tls.issueServerCert();
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const clusterKeys = (await webcrypto.subtle.generateKey(algorithm, false, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const clusterCa = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: 'CN=kubernetes',
    notBefore: new Date(Date.now() - 3_600_000),
    notAfter: new Date(Date.now() + 86_400_000 * 365),
    keys: clusterKeys as never,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  const objects = new Map<string, Record<string, any>>();
  const deleted: string[] = [];
  const requests: Array<{ method: string; path: string }> = [];
  let resourceVersion = 100;

  async function sign(object: Record<string, any>): Promise<void> {
    const pem = Buffer.from(object['spec'].request, 'base64').toString('utf8');
    const csr = new x509.Pkcs10CertificateRequest(pem);
    const usages: string[] = object['spec'].usages ?? [];
    const allowed = new Set(['digital signature', 'key encipherment', 'client auth']);
    if (!usages.includes('client auth') || usages.some((u) => !allowed.has(u))) {
      object['status'].conditions.push({
        type: 'Failed',
        status: 'True',
        reason: 'SignerValidationFailure',
        message: 'invalid usage for client certificate',
      });
      return;
    }
    const seconds: number = object['spec'].expirationSeconds ?? 365 * 86_400;
    const now = Date.now();
    const san = csr.extensions.find((extension) => extension instanceof x509.SubjectAlternativeNameExtension);
    const certificate = await x509.X509CertificateGenerator.create({
      serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(8)))
        .toString('hex')
        .replace(/^[89a-f]/, '1'),
      subject: csr.subjectName,
      issuer: clusterCa.subjectName,
      notBefore: new Date(now - 300_000),
      notAfter: new Date(now + seconds * 1000),
      publicKey: csr.publicKey,
      signingKey: clusterKeys.privateKey as never,
      signingAlgorithm: algorithm,
      extensions: [
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
        new x509.BasicConstraintsExtension(false, undefined, true),
        ...(san === undefined ? [] : [san]),
      ],
    });
    object['status'].certificate = Buffer.from(certificate.toString('pem')).toString('base64');
    object['metadata'].resourceVersion = String(++resourceVersion);
  }

  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    requests.push({ method: req.method ?? '', path });
    if (req.headers.authorization !== `Bearer ${options.token}`) {
      status(res, 401, 'Unauthorized', 'Unauthorized');
      return;
    }
    if (req.method === 'POST' && path === BASE) {
      if (options.canCreate === false) {
        status(
          res,
          403,
          'Forbidden',
          'certificatesigningrequests.certificates.k8s.io is forbidden: User "system:serviceaccount:x:issuer" cannot create resource',
        );
        return;
      }
      const body = await readBody(req);
      const name: string | undefined = body?.metadata?.name;
      const spec = body?.spec ?? {};
      if (name === undefined || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) || name.length > 253) {
        status(res, 422, 'Invalid', 'metadata.name: Invalid value');
        return;
      }
      if (objects.has(name)) {
        status(res, 409, 'AlreadyExists', `certificatesigningrequests.certificates.k8s.io "${name}" already exists`);
        return;
      }
      const pem = Buffer.from(String(spec.request ?? ''), 'base64').toString('utf8');
      if (!pem.includes('-----BEGIN CERTIFICATE REQUEST-----')) {
        status(
          res,
          422,
          'Invalid',
          'spec.request: Invalid value: []byte{...}: PEM block type must be CERTIFICATE REQUEST',
        );
        return;
      }
      if (typeof spec.signerName !== 'string' || spec.signerName === '') {
        status(res, 422, 'Invalid', 'spec.signerName: Required value');
        return;
      }
      if (spec.expirationSeconds !== undefined && spec.expirationSeconds < 600) {
        status(
          res,
          422,
          'Invalid',
          'spec.expirationSeconds: Invalid value: may not specify a duration less than 600 seconds (10 minutes)',
        );
        return;
      }
      const object = {
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'CertificateSigningRequest',
        metadata: {
          ...body.metadata,
          uid: `uid-${name}`,
          resourceVersion: String(++resourceVersion),
          creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        },
        spec: {
          ...spec,
          username: 'system:serviceaccount:x:issuer',
          groups: ['system:serviceaccounts', 'system:authenticated'],
        },
        status: {} as Record<string, any>,
      };
      objects.set(name, object);
      json(res, 201, object);
      if (options.touchAfterCreate === true) {
        object.metadata.resourceVersion = String(++resourceVersion);
      }
      return;
    }
    const match = new RegExp(`^${BASE}/([^/]+)(/approval)?$`).exec(path);
    const object = match === null ? undefined : objects.get(decodeURIComponent(match[1] ?? ''));
    if (match === null || object === undefined) {
      status(res, 404, 'NotFound', `certificatesigningrequests.certificates.k8s.io "${match?.[1] ?? ''}" not found`);
      return;
    }
    if (match[2] === '/approval' && req.method === 'PUT') {
      const body = await readBody(req);
      if (options.canApprove === false) {
        status(
          res,
          403,
          'Forbidden',
          `certificatesigningrequests.certificates.k8s.io "${object['metadata'].name}" is forbidden: user not permitted to approve requests with signerName "${CLIENT_SIGNER}"`,
        );
        return;
      }
      if (body?.metadata?.name !== object['metadata'].name) {
        status(res, 400, 'BadRequest', 'the name of the object does not match the name on the URL');
        return;
      }
      if (
        body?.metadata?.resourceVersion !== undefined &&
        body.metadata.resourceVersion !== object['metadata'].resourceVersion
      ) {
        status(
          res,
          409,
          'Conflict',
          'the object has been modified; please apply your changes to the latest version and try again',
        );
        return;
      }
      const conditions: any[] = body?.status?.conditions ?? [];
      if (!conditions.some((c) => c.type === 'Approved' && c.status === 'True')) {
        status(res, 422, 'Invalid', 'status.conditions: approval requires an Approved condition');
        return;
      }
      object['status'] = {
        ...object['status'],
        conditions: conditions.map((c) => ({
          ...c,
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        })),
      };
      object['metadata'].resourceVersion = String(++resourceVersion);
      json(res, 200, object);
      if (options.signerRunning !== false && object['spec'].signerName === CLIENT_SIGNER) {
        setTimeout(() => void sign(object), options.signDelayMs ?? 50);
      }
      return;
    }
    if (match[2] === undefined && req.method === 'GET') {
      json(res, 200, object);
      return;
    }
    if (match[2] === undefined && req.method === 'DELETE') {
      objects.delete(object['metadata'].name);
      deleted.push(object['metadata'].name);
      json(res, 200, { kind: 'Status', apiVersion: 'v1', status: 'Success' });
      return;
    }
    status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
  };

  const server: Server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
    handler(req, res).catch((error: unknown) => status(res, 500, 'InternalError', String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    caPem: tls.cert,
    clusterCaPem: clusterCa.toString('pem'),
    objects,
    deleted,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A kubeconfig for the fake API server with a bearer token. */
export function fakeKubeconfig(api: FakeCsrApi, token: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'fake',
        cluster: { server: api.url, 'certificate-authority-data': Buffer.from(api.caPem).toString('base64') },
      },
    ],
    users: [{ name: 'issuer', user: { token } }],
    contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'issuer' } }],
    'current-context': 'fake',
  });
}
