/**
 * A real Kubernetes control plane for end-to-end tests, without Docker: etcd, kube-apiserver and
 * kube-controller-manager built from Go modules (test/e2e/controlplane/build.mjs), started on loopback ports with
 * certificates made for this run, torn down with their temp directory.
 *
 * - kube-apiserver: serving certificate for 127.0.0.1, `--client-ca-file` = a fresh client CA, service-account
 *   issuer and keys, `--authorization-mode=RBAC`, structured authentication (`--authentication-config`) with one JWT
 *   authenticator per {@link JwtIssuer} given.
 * - kube-controller-manager: `csrsigning` with the client CA (so certificates it issues authenticate) and a short
 *   `--cluster-signing-duration`; `csrapproving` (it approves only kubelet CSRs: the rest is approved by whoever asks).
 * - an admin kubeconfig (client certificate with O=system:masters).
 *
 * Everything that was started is stopped (SIGTERM to the process group, SIGKILL after a grace period) and the temp
 * directory is removed, also when starting fails half way.
 *
 * @example
 * const cp = await startControlPlane({ binaries: await ensureControlPlaneBinaries() });
 * try { ... kubectl --kubeconfig cp.adminKubeconfig ... } finally { await cp.stop(); }
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { createCa, createServiceAccountKey, type CertKeyPem } from './controlplane-pki.js';

/** Paths of the binaries, as `ensureControlPlaneBinaries()` returns them. */
export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
}

/** One `jwt` authenticator of the AuthenticationConfiguration (apiserver.config.k8s.io/v1). */
export interface JwtIssuer {
  /** https URL; must differ from the service-account issuer. */
  url: string;
  /** PEM of the CA that signed the issuer's serving certificate. */
  caPem: string;
  audiences: string[];
  /** Default `sub` with prefix `oidc:`. */
  usernameClaim?: string;
  usernamePrefix?: string;
  /** Default `groups` with prefix `oidc:`. */
  groupsClaim?: string;
  groupsPrefix?: string;
}

export interface ControlPlaneOptions {
  binaries: ControlPlaneBinaries;
  jwtIssuers?: JwtIssuer[];
  /** kube-controller-manager `--cluster-signing-duration` (default `10m`: short, but over the 10 min floor of expirationSeconds). */
  clusterSigningDuration?: string;
  /** kube-apiserver's port on 127.0.0.1 (default: a free one). */
  apiPort?: number;
  /** Where the temp directory is made (default: the OS temp directory). */
  parentDir?: string;
  /** Keep the temp directory (logs, certificates) after stop() for debugging. */
  keepWorkDir?: boolean;
  /** Readiness deadline for each component, ms (default 90 s: a loaded 2-core machine is slow to start). */
  readyTimeoutMs?: number;
  log?: (line: string) => void;
}

/** Serializable facts about a running control plane: what the e2e global setup `provide()`s to test files. */
export interface ControlPlaneInfo {
  /** `https://127.0.0.1:<port>` */
  server: string;
  /** PEM file of the CA that signed kube-apiserver's serving certificate. */
  caFile: string;
  /** Admin kubeconfig: client certificate CN=e2e-admin, O=system:masters. */
  adminKubeconfig: string;
  /** The client CA (`--client-ca-file`, kube-controller-manager's signing CA) as PEM files. */
  clientCaCertFile: string;
  clientCaKeyFile: string;
  /** The AuthenticationConfiguration file given to `--authentication-config`. */
  authenticationConfigFile: string;
  /** `--service-account-issuer`. */
  serviceAccountIssuer: string;
  /** The temp directory holding certificates, data and logs (`<component>.log`). */
  workDir: string;
  etcdUrl: string;
}

export interface ControlPlane extends ControlPlaneInfo {
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (bound, read, released: good enough for a single machine's tests). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

interface Started {
  name: string;
  child: ChildProcess;
  logFile: string;
  exited: Promise<void>;
  exitCode: number | null | undefined;
}

function logTail(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Starts a component in its own process group, stdout and stderr appended to `<workDir>/<name>.log`. */
function startProcess(name: string, command: string, args: string[], workDir: string): Started {
  const logFile = path.join(workDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(command, args, { cwd: workDir, detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const started: Started = {
    name,
    child,
    logFile,
    exitCode: undefined,
    exited: new Promise<void>((resolve) => {
      child.once('exit', (code) => {
        started.exitCode = code;
        resolve();
      });
      child.once('error', () => resolve());
    }),
  };
  return started;
}

async function stopProcess(p: Started, graceMs = 10_000): Promise<void> {
  if (p.exitCode !== undefined || p.child.pid === undefined) return;
  const group = -p.child.pid;
  try {
    process.kill(group, 'SIGTERM');
  } catch {
    return; // already gone
  }
  const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
  if ((await Promise.race([p.exited.then(() => 'exited' as const), timer])) === 'timeout') {
    try {
      process.kill(group, 'SIGKILL');
    } catch {
      // gone in between
    }
    await p.exited;
  }
}

/** GET over HTTPS; resolves with the status and body (never rejects on HTTP errors). */
function httpsGet(
  url: string,
  tls: { ca?: string; cert?: string; key?: string; insecure?: boolean },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.insecure !== true, timeout: 5_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

async function waitFor(p: Started, what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    if (p.exitCode !== undefined) {
      throw new Error(`${p.name} exited (code ${p.exitCode}) before ${what}; log ${p.logFile}:\n${logTail(p.logFile)}`);
    }
    try {
      if (await probe()) return;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(
    `${p.name}: no ${what} within ${timeoutMs} ms (${lastError}); log ${p.logFile}:\n${logTail(p.logFile)}`,
  );
}

/** The AuthenticationConfiguration document (apiserver.config.k8s.io/v1, GA in Kubernetes 1.34). */
export function authenticationConfiguration(issuers: JwtIssuer[]): Record<string, unknown> {
  return {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AuthenticationConfiguration',
    jwt: issuers.map((i) => ({
      issuer: { url: i.url, certificateAuthority: i.caPem, audiences: i.audiences },
      claimMappings: {
        username: { claim: i.usernameClaim ?? 'sub', prefix: i.usernamePrefix ?? 'oidc:' },
        groups: { claim: i.groupsClaim ?? 'groups', prefix: i.groupsPrefix ?? 'oidc:' },
      },
    })),
  };
}

/** A kubeconfig with one cluster, one user (client certificate), one context, all inline. */
export function clientCertKubeconfig(
  server: string,
  caPem: string,
  user: string,
  pair: CertKeyPem,
): Record<string, unknown> {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'e2e', cluster: { server, 'certificate-authority-data': b64(caPem) } }],
    users: [{ name: user, user: { 'client-certificate-data': b64(pair.cert), 'client-key-data': b64(pair.key) } }],
    contexts: [{ name: 'e2e', context: { cluster: 'e2e', user } }],
    'current-context': 'e2e',
  };
}

/** A ClusterProfile (multicluster.x-k8s.io/v1alpha1) with one access provider reaching `server`. */
export function clusterProfileDocument(o: {
  name: string;
  namespace: string;
  provider: string;
  server: string;
  caPem: string;
  /** `spec.clusterManager.name` (default `e2e`). */
  clusterManager?: string;
  /** The `client.authentication.k8s.io/exec` cluster extension: per-cluster config for the plugin. */
  execExtension?: Record<string, unknown>;
}): Record<string, unknown> {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name: o.name, namespace: o.namespace },
    spec: { displayName: o.name, clusterManager: { name: o.clusterManager ?? 'e2e' } },
    status: {
      accessProviders: [
        {
          name: o.provider,
          cluster: {
            server: o.server,
            'certificate-authority-data': Buffer.from(o.caPem).toString('base64'),
            ...(o.execExtension === undefined
              ? {}
              : { extensions: [{ name: 'client.authentication.k8s.io/exec', extension: o.execExtension }] }),
          },
        },
      ],
    },
  };
}

/** Starts etcd, kube-apiserver and kube-controller-manager; resolves once kube-apiserver's /readyz says ok. */
export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const log = options.log ?? (() => {});
  const readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
  const workDir = await mkdtemp(path.join(options.parentDir ?? tmpdir(), 'cpc-e2e-'));
  const processes: Started[] = [];
  const stop = async (): Promise<void> => {
    for (const p of [...processes].reverse()) await stopProcess(p);
    if (options.keepWorkDir !== true) await rm(workDir, { recursive: true, force: true });
  };

  try {
    const file = async (name: string, content: string, mode = 0o600): Promise<string> => {
      const target = path.join(workDir, name);
      await writeFile(target, content, { mode });
      return target;
    };
    const [etcdClientPort, etcdPeerPort, kcmPort, freeApiPort] = await uniquePorts(4, options.apiPort);
    const apiPort = options.apiPort ?? freeApiPort;
    const server = `https://127.0.0.1:${apiPort}`;
    const serviceAccountIssuer = server;

    const servingCa = await createCa('e2e-serving-ca');
    const clientCa = await createCa('e2e-client-ca');
    const serving = await servingCa.issueServerCert({
      commonName: 'kube-apiserver',
      ips: ['127.0.0.1', '10.0.0.1'],
      dns: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
    });
    const admin = await clientCa.issueClientCert('e2e-admin', { groups: ['system:masters'] });
    const kcmIdentity = await clientCa.issueClientCert('system:kube-controller-manager', {
      groups: ['system:masters'],
    });
    const saKey = createServiceAccountKey();

    const caFile = await file('serving-ca.crt', servingCa.cert, 0o644);
    const clientCaCertFile = await file('client-ca.crt', clientCa.cert, 0o644);
    const clientCaKeyFile = await file('client-ca.key', clientCa.key);
    const servingCertFile = await file('apiserver.crt', serving.cert, 0o644);
    const servingKeyFile = await file('apiserver.key', serving.key);
    const saPublicFile = await file('sa.pub', saKey.publicKey, 0o644);
    const saPrivateFile = await file('sa.key', saKey.privateKey);
    const authenticationConfigFile = await file(
      'authentication-config.yaml',
      stringify(authenticationConfiguration(options.jwtIssuers ?? [])),
      0o644,
    );
    const adminKubeconfig = await file(
      'admin.kubeconfig',
      stringify(clientCertKubeconfig(server, servingCa.cert, 'e2e-admin', admin)),
    );
    const kcmKubeconfig = await file(
      'kube-controller-manager.kubeconfig',
      stringify(clientCertKubeconfig(server, servingCa.cert, 'system:kube-controller-manager', kcmIdentity)),
    );

    // etcd
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    await mkdir(path.join(workDir, 'etcd'), { mode: 0o700 });
    const etcd = startProcess(
      'etcd',
      options.binaries.etcd,
      [
        '--name=e2e',
        `--data-dir=${path.join(workDir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=e2e=${peerUrl}`,
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      workDir,
    );
    processes.push(etcd);
    await waitFor(etcd, 'healthy /health', readyTimeoutMs, async () => {
      const res = await fetch(`${etcdUrl}/health`);
      return res.ok && ((await res.json()) as { health?: string }).health === 'true';
    });
    log(`controlplane: etcd ready at ${etcdUrl}`);

    // kube-apiserver
    const apiserver = startProcess(
      'kube-apiserver',
      options.binaries.kubeApiserver,
      [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        `--cert-dir=${workDir}`,
        `--tls-cert-file=${servingCertFile}`,
        `--tls-private-key-file=${servingKeyFile}`,
        `--client-ca-file=${clientCaCertFile}`,
        '--service-cluster-ip-range=10.0.0.0/24',
        `--service-account-issuer=${serviceAccountIssuer}`,
        `--service-account-key-file=${saPublicFile}`,
        `--service-account-signing-key-file=${saPrivateFile}`,
        '--authorization-mode=RBAC',
        `--authentication-config=${authenticationConfigFile}`,
        // No service-account controller runs to create `default` ServiceAccounts; tests create the ones they use.
        '--disable-admission-plugins=ServiceAccount',
        '--allow-privileged=true',
        // The default lease reconciler writes the advertise address into Endpoints/kubernetes, and loopback addresses
        // are invalid there: it logs an error every 10 s. Nothing here needs the in-cluster service endpoints.
        '--endpoint-reconciler-type=none',
        '--v=1',
      ],
      workDir,
    );
    processes.push(apiserver);
    const adminTls = { ca: servingCa.cert, cert: admin.cert, key: admin.key };
    await waitFor(apiserver, 'ready /readyz', readyTimeoutMs, async () => {
      const res = await httpsGet(`${server}/readyz`, adminTls);
      return res.status === 200;
    });
    log(`controlplane: kube-apiserver ready at ${server}`);

    // kube-controller-manager
    const kcm = startProcess(
      'kube-controller-manager',
      options.binaries.kubeControllerManager,
      [
        `--kubeconfig=${kcmKubeconfig}`,
        `--authentication-kubeconfig=${kcmKubeconfig}`,
        `--authorization-kubeconfig=${kcmKubeconfig}`,
        // Do not look up the request-header CA in kube-system/extension-apiserver-authentication (we run no front
        // proxy): without this it logs "missing content for CA bundle" in a loop.
        '--authentication-skip-lookup=true',
        '--controllers=csrsigning,csrapproving,garbagecollector',
        `--cluster-signing-cert-file=${clientCaCertFile}`,
        `--cluster-signing-key-file=${clientCaKeyFile}`,
        `--cluster-signing-duration=${options.clusterSigningDuration ?? '10m'}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${kcmPort}`,
        `--cert-dir=${path.join(workDir, 'kcm-certs')}`,
        '--v=1',
      ],
      workDir,
    );
    processes.push(kcm);
    await waitFor(kcm, 'healthy /healthz', readyTimeoutMs, async () => {
      const res = await httpsGet(`https://127.0.0.1:${kcmPort}/healthz`, { insecure: true });
      return res.status === 200;
    });
    log(`controlplane: kube-controller-manager healthy on port ${kcmPort}`);

    return {
      server,
      caFile,
      adminKubeconfig,
      clientCaCertFile,
      clientCaKeyFile,
      authenticationConfigFile,
      serviceAccountIssuer,
      workDir,
      etcdUrl,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** `count` distinct free ports, none of them `reserved` (a port the caller chose). */
async function uniquePorts(count: number, reserved?: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) {
    const port = await freePort();
    if (port !== reserved) ports.add(port);
  }
  return [...ports];
}
