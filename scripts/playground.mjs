// A hub to try the package on, in one command: a real kube-apiserver (with etcd and kube-controller-manager) built
// from the same Go modules as the end-to-end tests, the ClusterProfile CRD, three member ClusterProfiles whose access
// works, a providers file, and the commands to go on with. Ctrl-C stops every process and removes the files.
//
//   npm run playground                    # builds the package, then this
//   node scripts/playground.mjs [--port 6443] [--dir DIR] [--keep]
//
// The members are the hub itself, reached through three distinct ServiceAccounts (member-1..3 in `fleet`) with the
// token-request plugin: every credential is a real, short-lived TokenRequest token that the real API server
// authenticates and authorises, and one API server is all it takes (a second one, or a tenant-cert issuer, would add
// processes and minutes without showing anything more of the client side). The plugin's bootstrap identity is the
// client certificate of the user `hub-cluster`, which may only create tokens for those three ServiceAccounts.
//
// The control plane is started by test/helpers/controlplane.ts, the module the e2e global setup uses; this script
// loads it (TypeScript) through Node's type stripping, with `.js` import specifiers mapped to their `.ts` sources.
// Errors are one line with a PLAYGROUND_* code: they belong to this script, not to the package's error registry.
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { registerHooks } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

registerHooks({
  resolve(specifier, context, next) {
    try {
      return next(specifier, context);
    } catch (error) {
      if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !specifier.startsWith('.') || !specifier.endsWith('.js'))
        throw error;
      return next(`${specifier.slice(0, -3)}.ts`, context);
    }
  },
});

const root = fileURLToPath(new URL('..', import.meta.url));
const NAMESPACE = 'fleet';
const MEMBERS = ['member-1', 'member-2', 'member-3'];
const PROVIDERS_FILE = 'clusterprofile-provider-file.json';
const BINARIES = [
  'clusterprofile',
  'clusterprofile-tenant-cert',
  'clusterprofile-token-request',
  'clusterprofile-oidc',
];

class PlaygroundError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const log = (line) => process.stderr.write(`playground: ${line}\n`);

function options() {
  try {
    const { values } = parseArgs({
      options: { port: { type: 'string', default: '6443' }, dir: { type: 'string' }, keep: { type: 'boolean' } },
    });
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new PlaygroundError('PLAYGROUND_USAGE', `--port must be a port number, got "${values.port}"`);
    }
    return { port, dir: values.dir, keep: values.keep === true || process.env.PLAYGROUND_KEEP === '1' };
  } catch (error) {
    if (error instanceof PlaygroundError) throw error;
    throw new PlaygroundError(
      'PLAYGROUND_USAGE',
      `${error.message}; usage: npm run playground -- [--port N] [--dir DIR] [--keep]`,
    );
  }
}

/** Fails at once when something listens on 127.0.0.1:port (kube-apiserver would only say so in its log). */
function assertPortFree(port) {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error) =>
      reject(
        new PlaygroundError(
          'PLAYGROUND_PORT_IN_USE',
          `127.0.0.1:${port} is ${error.code === 'EACCES' ? 'not allowed' : 'in use'} (${error.code}): stop what listens there, or start on another port with npm run playground -- --port N`,
        ),
      ),
    );
    server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
  });
}

/** etcd and kube-apiserver / kube-controller-manager from the e2e build cache, built when missing or out of date. */
async function binaries() {
  const { ensureControlPlaneBinaries, GoRequirementError } = await import('../test/e2e/controlplane/build.mjs');
  let built;
  try {
    built = await ensureControlPlaneBinaries({ only: ['etcd', 'kubernetes'], log });
  } catch (error) {
    if (error instanceof GoRequirementError) throw new PlaygroundError('PLAYGROUND_NO_GO', error.message);
    throw error;
  }
  for (const [name, file] of Object.entries({ etcd: built.etcd, 'kube-apiserver': built.kubeApiserver })) {
    const probe = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 30_000 });
    if (probe.status !== 0) {
      const dir = join(file, '..');
      throw new PlaygroundError(
        'PLAYGROUND_BUILD_BROKEN',
        `the cached ${name} (${file}) does not run (${probe.error?.code ?? `exit ${probe.status}`}): remove ${dir} and start again to rebuild it`,
      );
    }
  }
  const reused = Object.values(built.targets).every((target) => !target.built);
  log(`${reused ? 'reusing the build' : 'built'}: ${Object.values(built.versions).join(', ')}`);
  return built;
}

const shellQuote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

/** The directory the user works in: bin/ (Node 24 and the package's binaries), node_modules/ (the package). */
function workspace(dir) {
  mkdirSync(join(dir, 'bin'), { recursive: true });
  symlinkSync(process.execPath, join(dir, 'bin', 'node'));
  for (const name of BINARIES) {
    const file = join(dir, 'bin', name);
    writeFileSync(
      file,
      `#!/bin/sh\nexec ${shellQuote(process.execPath)} ${shellQuote(join(root, 'bin', `${name}.mjs`))} "$@"\n`,
    );
    chmodSync(file, 0o755);
  }
  mkdirSync(join(dir, 'node_modules', '@kubernetes'), { recursive: true });
  symlinkSync(root, join(dir, 'node_modules', 'clusterprofile-credentials'));
  symlinkSync(
    join(root, 'node_modules', '@kubernetes', 'client-node'),
    join(dir, 'node_modules', '@kubernetes', 'client-node'),
  );
}

/** The hub's objects: the CRD, the members' ServiceAccounts and rights, the bootstrap identity's one right. */
function hubObjects() {
  const crds = readFileSync(join(root, 'schemas', 'crd', 'multicluster.x-k8s.io_clusterprofiles.yaml'), 'utf8');
  const rbac = (kind, name, extra) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: { name, ...extra },
  });
  return {
    crds,
    objects: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
      ...MEMBERS.map((name) => ({
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name, namespace: NAMESPACE },
      })),
      // What the README's examples do on a member: list namespaces and nodes (cluster scope), and read the rest.
      {
        ...rbac('ClusterRole', 'playground-member'),
        rules: [{ apiGroups: [''], resources: ['namespaces', 'nodes'], verbs: ['get', 'list', 'watch'] }],
      },
      ...MEMBERS.flatMap((name) => [
        {
          ...rbac('ClusterRoleBinding', `playground-${name}`),
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'playground-member' },
          subjects: [{ kind: 'ServiceAccount', name, namespace: NAMESPACE }],
        },
        {
          ...rbac('ClusterRoleBinding', `playground-${name}-view`),
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
          subjects: [{ kind: 'ServiceAccount', name, namespace: NAMESPACE }],
        },
      ]),
      // deploy/token-request-rbac.yaml's Role, for the three ServiceAccounts.
      {
        ...rbac('Role', 'clusterprofile-token-request', { namespace: NAMESPACE }),
        rules: [{ apiGroups: [''], resources: ['serviceaccounts/token'], resourceNames: MEMBERS, verbs: ['create'] }],
      },
      {
        ...rbac('RoleBinding', 'clusterprofile-token-request', { namespace: NAMESPACE }),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'clusterprofile-token-request' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'hub-cluster' }],
      },
    ],
  };
}

/** Creates the objects as the hub's admin, then each profile and its status (a separate write: a subresource). */
async function populate(adminKubeconfig, server, caPem) {
  const { clusterProfileDocument } = await import('../test/helpers/controlplane.ts');
  const k8s = await import('@kubernetes/client-node');
  const { parseAllDocuments } = await import('yaml');
  const config = new k8s.KubeConfig();
  config.loadFromFile(adminKubeconfig);
  const objects = k8s.KubernetesObjectApi.makeApiClient(config);
  const { crds, objects: rest } = hubObjects();
  for (const crd of parseAllDocuments(crds).map((doc) => doc.toJSON())) if (crd !== null) await objects.create(crd);
  for (const object of rest) await objects.create(object);
  const custom = config.makeApiClient(k8s.CustomObjectsApi);
  const group = {
    group: 'multicluster.x-k8s.io',
    version: 'v1alpha1',
    namespace: NAMESPACE,
    plural: 'clusterprofiles',
  };
  const profiles = MEMBERS.map((name) =>
    clusterProfileDocument({
      name,
      namespace: NAMESPACE,
      provider: 'token-request',
      server,
      caPem,
      clusterManager: 'playground',
      execExtension: { namespace: NAMESPACE, serviceAccount: name, expirationSeconds: 3600 },
    }),
  );
  for (const body of profiles) {
    // The CRD is served a moment after it is created.
    for (let attempt = 0; ; attempt += 1) {
      try {
        await custom.createNamespacedCustomObject({ ...group, body: { ...body, status: undefined } });
        break;
      } catch (error) {
        if (error?.code !== 404 || attempt > 100) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const current = await custom.getNamespacedCustomObject({ ...group, name: body.metadata.name });
    await custom.replaceNamespacedCustomObjectStatus({
      ...group,
      name: body.metadata.name,
      body: { ...current, status: body.status },
    });
  }
  return profiles;
}

/** Every member through the README's path (buildConfigFromClusterProfile + the plugin): access that works. */
async function checkAccess(dir, profiles) {
  const { CoreV1Api } = await import('@kubernetes/client-node');
  const { buildConfigFromClusterProfile, loadAccessConfig } = await import('../dist/library/index.js');
  const accessConfig = await loadAccessConfig(join(dir, PROVIDERS_FILE));
  for (const body of profiles) {
    await buildConfigFromClusterProfile(body, accessConfig).makeApiClient(CoreV1Api).listNamespace();
  }
}

async function main() {
  const settings = options();
  // Stopping removes the directory: one given with --dir must be new or empty, never a user's files.
  if (settings.dir !== undefined && existsSync(settings.dir) && readdirSync(settings.dir).length > 0) {
    throw new PlaygroundError('PLAYGROUND_USAGE', `--dir ${settings.dir} is not empty: give a new or empty directory`);
  }
  await assertPortFree(settings.port);
  const built = await binaries();
  const { startControlPlane, clientCertKubeconfig } = await import('../test/helpers/controlplane.ts');
  const { loadCa } = await import('../test/helpers/controlplane-pki.ts');
  const { stringify } = await import('yaml');

  const dir = settings.dir ?? mkdtempSync(join(tmpdir(), 'clusterprofile-playground-'));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  /** @type {Promise<import('../test/helpers/controlplane.ts').ControlPlane> | undefined} */
  let starting;
  let stopping;
  const stop = (reason) => {
    stopping ??= (async () => {
      log(`stopping (${reason})`);
      // A signal while the control plane starts: let it finish starting (or fail), then stop what it started.
      await (await starting?.catch(() => undefined))?.stop();
      if (!settings.keep) rmSync(dir, { recursive: true, force: true });
      log(settings.keep ? `stopped; kept ${dir}` : 'stopped; removed its files');
    })();
    return stopping;
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => void stop(signal).then(() => process.exit(0)));
  }

  try {
    workspace(dir);
    starting = startControlPlane({
      binaries: built,
      apiPort: settings.port,
      parentDir: dir,
      keepWorkDir: settings.keep,
      log: (line) => log(line.replace(/^controlplane: /, '')),
    });
    const controlPlane = await starting;
    const caPem = readFileSync(controlPlane.caFile, 'utf8');
    const hubKubeconfig = join(dir, 'hub.kubeconfig');
    writeFileSync(hubKubeconfig, readFileSync(controlPlane.adminKubeconfig), { mode: 0o600 });
    const clientCa = await loadCa({
      cert: readFileSync(controlPlane.clientCaCertFile, 'utf8'),
      key: readFileSync(controlPlane.clientCaKeyFile, 'utf8'),
    });
    const bootstrap = join(dir, 'bootstrap.kubeconfig');
    const hubCluster = await clientCa.issueClientCert('hub-cluster');
    writeFileSync(bootstrap, stringify(clientCertKubeconfig(controlPlane.server, caPem, 'hub-cluster', hubCluster)), {
      mode: 0o600,
    });
    const providers = {
      providers: [
        {
          name: 'token-request',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: join(dir, 'bin', 'clusterprofile-token-request'),
            args: ['--bootstrap-kubeconfig', bootstrap, '--cache-dir', join(dir, 'cache')],
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
        },
      ],
    };
    // The README's controller example reads the first name, its kubectl section the second.
    for (const name of [PROVIDERS_FILE, 'providers.json']) {
      writeFileSync(join(dir, name), `${JSON.stringify(providers, null, 2)}\n`);
    }
    const profiles = await populate(controlPlane.adminKubeconfig, controlPlane.server, caPem);
    for (const body of profiles) writeFileSync(join(dir, `${body.metadata.name}.yaml`), stringify(body));
    await checkAccess(dir, profiles);

    const here = realpathSync(dir);
    process.stdout.write(
      [
        `The hub is up at ${controlPlane.server}: ClusterProfiles ${MEMBERS.join(', ')} in namespace ${NAMESPACE}, each the hub itself`,
        'as its own ServiceAccount through the token-request plugin. In another shell:',
        '',
        `  cd ${here}`,
        `  export KUBECONFIG=${join(here, 'hub.kubeconfig')} PATH=${join(here, 'bin')}:$PATH`,
        `  clusterprofile fleet status -n ${NAMESPACE} --clusterprofile-provider-file ${PROVIDERS_FILE}`,
        `  clusterprofile kubeconfig --namespace ${NAMESPACE} --name member-1 --clusterprofile-provider-file providers.json > member-1.kubeconfig`,
        '  kubectl --kubeconfig member-1.kubeconfig auth whoami',
        '',
        "The README's examples run here as written: save one as controller.mts (or fleet.mts) and run node controller.mts.",
        `Ctrl-C stops the hub and removes ${settings.keep ? 'nothing (--keep)' : here}.`,
        'ready',
        '',
      ].join('\n'),
    );
  } catch (error) {
    await stop('start failed');
    throw error;
  }
}

try {
  await main();
} catch (error) {
  const code = error instanceof PlaygroundError ? error.code : 'PLAYGROUND_FAILED';
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`${code}: ${code === 'PLAYGROUND_FAILED' ? message.split('\n')[0] : message}\n`);
  if (code === 'PLAYGROUND_FAILED' && message.includes('\n'))
    process.stderr.write(`${message.split('\n').slice(1, 40).join('\n')}\n`);
  process.exit(code === 'PLAYGROUND_USAGE' ? 2 : 1);
}
