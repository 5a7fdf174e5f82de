// The main job on an embedded default: a controller gets a working Kubernetes client for a member cluster from a
// ClusterProfile, with a short-lived client certificate and no long-lived secret anywhere.
//
//   npm run demo
//
// Everything is real except the member API server, which is a small HTTPS endpoint on loopback standing in for
// kube-apiserver: it authenticates client certificates against the issuer's client-ca.crt exactly like
// --client-ca-file does and answers /api/v1/namespaces and SelfSubjectReview as Kubernetes does. (The end-to-end
// suite runs the same flow against a real kube-apiserver.) Steps:
//   1. provider side: `clusterprofile issuer serve` with the embedded CA in a fresh data dir;
//   2. consumer side: `clusterprofile keygen`; the provider admin runs `clusterprofile issuer trust`;
//   3. the hub's ClusterProfile lists the member with the `tenant-cert` access provider, the controller's providers
//      file maps it to the `clusterprofile-tenant-cert` exec plugin;
//   4. a controller calls loadAccessConfig + buildConfigFromClusterProfile and lists namespaces (client-node);
//   5. `clusterprofile kubeconfig` renders a kubeconfig and kubectl (when installed) runs `auth whoami` with it.
import { spawn, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api } from '@kubernetes/client-node';
import { buildConfigFromClusterProfile, formatError, loadAccessConfig } from '../dist/library/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'bin/clusterprofile.mjs');
const plugin = join(root, 'bin/clusterprofile-tenant-cert.mjs');
const work = mkdtempSync(join(tmpdir(), 'clusterprofile-demo-'));
const dataDir = join(work, 'issuer-data');
const PROVIDER = 'member-1';
const CONSUMER = 'hub-controller';
const step = (text) => process.stdout.write(`\n▶ ${text}\n`);
const show = (text) => process.stdout.write(`  ${text.trimEnd().split('\n').join('\n  ')}\n`);

function cliRun(args) {
  const result = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`clusterprofile ${args.join(' ')} failed:\n${result.stderr}`);
  return result.stdout;
}

let issuer;
let member;
try {
  step(`provider: clusterprofile issuer serve --data-dir ${dataDir} --cluster-id ${PROVIDER} (embedded CA)`);
  issuer = spawn(
    process.execPath,
    [
      cli,
      'issuer',
      'serve',
      '--data-dir',
      dataDir,
      '--listen',
      '127.0.0.1:0',
      '--cluster-id',
      PROVIDER,
      '--cert-lifetime',
      '1h',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const issuerURL = await new Promise((resolve, reject) => {
    let output = '';
    const look = (chunk) => {
      output += chunk;
      const match = /https:\/\/127\.0\.0\.1:[1-9]\d*/.exec(output);
      if (match) resolve(match[0]);
    };
    issuer.stdout.setEncoding('utf8').on('data', look);
    issuer.stderr.setEncoding('utf8').on('data', look);
    issuer.on('exit', (code) => reject(new Error(`the issuer exited (${code}):\n${output}`)));
  });
  show(`issuer listening on ${issuerURL}; wrote serving-ca.crt and client-ca.crt`);

  step(
    `consumer: clusterprofile keygen --out consumer.key  →  provider admin: clusterprofile issuer trust --cluster-id ${CONSUMER}`,
  );
  const keyFile = join(work, 'consumer.key');
  writeFileSync(`${keyFile}.pub`, cliRun(['keygen', '--out', keyFile, '--algorithm', 'ecdsa-p256']));
  cliRun(['issuer', 'trust', '--data-dir', dataDir, '--cluster-id', CONSUMER, '--public-key', `${keyFile}.pub`]);
  show(readFileSync(`${keyFile}.pub`, 'utf8'));

  step('member API server (stand-in): HTTPS on loopback, client certificates verified against client-ca.crt');
  const clientCa = readFileSync(join(dataDir, 'client-ca.crt'), 'utf8');
  member = https.createServer(
    {
      cert: readFileSync(join(dataDir, 'serving.crt')),
      key: readFileSync(join(dataDir, 'serving.key')),
      ca: clientCa,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const peer = req.socket.getPeerCertificate();
      const username = peer.subject.CN;
      const groups = [].concat(peer.subject.O ?? []);
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET' && req.url.startsWith('/api/v1/namespaces')) {
        res.end(
          JSON.stringify({
            kind: 'NamespaceList',
            apiVersion: 'v1',
            metadata: {},
            items: ['default', 'kube-system', `tenant-${username}`].map((name) => ({ metadata: { name } })),
          }),
        );
      } else if (req.method === 'POST' && req.url.startsWith('/apis/authentication.k8s.io/v1/selfsubjectreviews')) {
        res.statusCode = 201;
        res.end(
          JSON.stringify({
            kind: 'SelfSubjectReview',
            apiVersion: 'authentication.k8s.io/v1',
            metadata: {},
            status: { userInfo: { username, groups: [...groups, 'system:authenticated'] } },
          }),
        );
      } else {
        res.statusCode = 404;
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            reason: 'NotFound',
            code: 404,
            message: 'not served by the demo stand-in',
          }),
        );
      }
    },
  );
  await new Promise((resolve) => member.listen(0, '127.0.0.1', resolve));
  const server = `https://127.0.0.1:${member.address().port}`;
  show(server);

  step("hub: the ClusterProfile and the controller's providers file");
  const profile = {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name: PROVIDER, namespace: 'fleet' },
    spec: { displayName: PROVIDER, clusterManager: { name: 'demo' } },
    status: {
      accessProviders: [
        {
          name: 'tenant-cert',
          cluster: {
            server,
            'certificate-authority-data': Buffer.from(readFileSync(join(dataDir, 'serving-ca.crt'))).toString('base64'),
            extensions: [
              {
                name: 'client.authentication.k8s.io/exec',
                extension: {
                  issuerURL,
                  issuerCA: Buffer.from(readFileSync(join(dataDir, 'serving-ca.crt'))).toString('base64'),
                  providerClusterID: PROVIDER,
                },
              },
            ],
          },
        },
      ],
    },
  };
  const profileFile = join(work, 'clusterprofile.json');
  writeFileSync(profileFile, JSON.stringify(profile, null, 2));
  const providersFile = join(work, 'clusterprofile-provider-file.json');
  writeFileSync(
    providersFile,
    JSON.stringify(
      {
        providers: [
          {
            name: 'tenant-cert',
            execConfig: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: process.execPath,
              args: [
                plugin,
                '--cluster-id',
                CONSUMER,
                '--key-file',
                keyFile,
                '--cache-dir',
                join(work, 'cache'),
                '--identity-dir',
                join(work, 'identities'),
              ],
              provideClusterInfo: true,
              interactiveMode: 'Never',
            },
          },
        ],
      },
      null,
      2,
    ),
  );
  show(`${profileFile}\n${providersFile}`);

  step('controller: loadAccessConfig + buildConfigFromClusterProfile → CoreV1Api.listNamespace()');
  const kc = buildConfigFromClusterProfile(profile, await loadAccessConfig(providersFile));
  const namespaces = await kc.makeApiClient(CoreV1Api).listNamespace();
  show(`namespaces: ${namespaces.items.map((ns) => ns.metadata?.name).join(', ')}`);
  // The plugin as kubectl would run it: a cache hit, showing the certificate the controller just used.
  const cached = JSON.parse(
    spawnSync(
      process.execPath,
      [
        plugin,
        '--cluster-id',
        CONSUMER,
        '--key-file',
        keyFile,
        '--cache-dir',
        join(work, 'cache'),
        '--identity-dir',
        join(work, 'identities'),
      ],
      {
        encoding: 'utf8',
        env: {
          ...process.env,
          KUBERNETES_EXEC_INFO: JSON.stringify({
            apiVersion: 'client.authentication.k8s.io/v1',
            kind: 'ExecCredential',
            spec: {
              interactive: false,
              cluster: { server, config: profile.status.accessProviders[0].cluster.extensions[0].extension },
            },
          }),
        },
      },
    ).stdout,
  );
  const certificate = new X509Certificate(cached.status.clientCertificateData);
  show(
    `client certificate: ${certificate.subject.replace(/\n/g, ', ')}; valid ${certificate.validFrom} → ${certificate.validTo}`,
  );
  show(`the plugin hands it out until ${cached.status.expirationTimestamp} (2/3 of its lifetime), then renews it`);

  step('kubectl: clusterprofile kubeconfig --profile clusterprofile.json | kubectl auth whoami');
  const kubeconfigFile = join(work, 'member-1.kubeconfig');
  writeFileSync(
    kubeconfigFile,
    cliRun(['kubeconfig', '--profile', profileFile, '--clusterprofile-provider-file', providersFile]),
  );
  // Asynchronously: the member stand-in lives in this event loop and must answer kubectl.
  const kubectl = await new Promise((resolve) => {
    const child = spawn('kubectl', ['--kubeconfig', kubeconfigFile, 'auth', 'whoami'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', (error) => resolve({ missing: error.code === 'ENOENT', stderr: error.message }));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
  if (kubectl.missing) show('kubectl is not installed: skipped');
  else if (kubectl.status !== 0) throw new Error(`kubectl failed:\n${kubectl.stderr}`);
  else show(kubectl.stdout);

  process.stdout.write(
    '\n✔ a working client for the member cluster from its ClusterProfile, with a 1-hour certificate and no stored secret\n',
  );
} catch (error) {
  process.stderr.write(`demo failed: ${formatError(error)}\n`);
  process.exitCode = 1;
} finally {
  if (process.env.DEMO_KEEP === undefined) member?.close();
  if (process.env.DEMO_KEEP === undefined) issuer?.kill('SIGTERM');
  if (process.env.DEMO_KEEP === undefined) rmSync(work, { recursive: true, force: true });
  else process.stdout.write(`kept ${work}\n`);
}
