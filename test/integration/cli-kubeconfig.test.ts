/**
 * `clusterprofile kubeconfig` as users run it: the built bin as a child process, a profile from a file or from a local
 * HTTPS "hub" that serves ClusterProfiles like the API server, and bad input.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { writeSplitKubeconfig } from '../helpers/kubeconfig-split.js';
import { BIN, runBin } from '../helpers/library-cli.js';
import { runNode } from '../helpers/process.js';
import { buildProfile } from '../helpers/library-fixtures.js';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.js';

const PATH_PREFIX = '/apis/multicluster.x-k8s.io/v1alpha1/namespaces/';
const HUB_TOKEN = 'hub-reader-token';

let dir: string;
let providers: string;
let ca: TestCa;
let hub: TestHttpsServer;
let hubKubeconfig: string;

function hubProfile() {
  const profile = buildProfile();
  profile.metadata = {
    name: 'spoke-1',
    namespace: 'fleet',
    uid: '7f2c',
    resourceVersion: '42',
    labels: { 'x-k8s.io/cluster-manager': 'demo' },
  };
  return profile;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-cli-it-'));
  providers = join(dir, 'providers.json');
  await writeFile(
    providers,
    JSON.stringify({
      providers: [
        { name: 'other', execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 'other-plugin' } },
        {
          name: 'test-provider-1',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: '/usr/local/bin/plugin',
            args: ['--mode', 'x'],
            env: [{ name: 'CLIENT_ID', value: 'from-file' }],
            provideClusterInfo: true,
          },
          profileSourcedCLIArgsPolicy: 'Append',
          profileSourcedEnvVarsPolicy: 'AppendIfNotExists',
        },
      ],
    }),
  );
  await writeFile(join(dir, 'profile.yaml'), stringify(buildProfile()));

  ca = await createTestCa();
  hub = await startHttpsServer({
    ca,
    handler(request, _req, res) {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (request.bearer !== HUB_TOKEN) {
        send(401, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'Unauthorized',
          reason: 'Unauthorized',
          code: 401,
        });
        return;
      }
      if (request.method === 'GET' && request.url === `${PATH_PREFIX}fleet/clusterprofiles/spoke-1`) {
        send(200, hubProfile());
        return;
      }
      const name = request.url.split('/').at(-1);
      send(404, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `clusterprofiles.multicluster.x-k8s.io "${name}" not found`,
        reason: 'NotFound',
        details: { name, group: 'multicluster.x-k8s.io', kind: 'clusterprofiles' },
        code: 404,
      });
    },
  });
  hubKubeconfig = join(dir, 'hub.kubeconfig');
  await writeFile(
    hubKubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'hub', cluster: { server: hub.url, 'certificate-authority-data': ca.certBase64 } }],
      users: [{ name: 'reader', user: { token: HUB_TOKEN } }],
      contexts: [{ name: 'hub', context: { cluster: 'hub', user: 'reader', namespace: 'default' } }],
      'current-context': 'hub',
    }),
  );
});

afterAll(async () => {
  await hub?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('clusterprofile kubeconfig (built bin)', () => {
  it('renders a kubeconfig from a profile file, choosing by providers-file order and applying the policies', async () => {
    const result = await runBin(
      ['kubeconfig', '--profile', 'profile.yaml', '--clusterprofile-provider-file', providers],
      { cwd: dir },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const doc = parse(result.stdout);
    expect(doc.clusters).toEqual([
      {
        name: 'test-cluster',
        cluster: {
          server: 'https://test-server.com',
          'certificate-authority-data':
            buildProfile().status!.accessProviders![0]!.cluster!['certificate-authority-data'],
          'proxy-url': 'http://proxy.example.com',
          extensions: [
            { name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'spoke-1', audience: 'spoke' } },
          ],
        },
      },
    ]);
    expect(doc.users[0].user.exec).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      command: '/usr/local/bin/plugin',
      args: ['--mode', 'x', '--audience', 'audience'],
      env: [
        { name: 'CLIENT_ID', value: 'from-file' },
        { name: 'TENANT_ID', value: 'tenant-id' },
      ],
      provideClusterInfo: true,
      interactiveMode: 'Never',
    });
    expect(doc['current-context']).toBe('test-cluster');
    // Deterministic: the same bytes on a second run.
    const again = await runBin(
      ['kubeconfig', '--profile', 'profile.yaml', '--clusterprofile-provider-file', providers],
      { cwd: dir },
    );
    expect(again.stdout).toBe(result.stdout);
  });

  it('reads the providers file from the default name in the working directory', async () => {
    const work = await mkdtemp(join(tmpdir(), 'cpc-cli-default-'));
    try {
      await writeFile(
        join(work, 'clusterprofile-provider-file.json'),
        JSON.stringify({
          providers: [
            {
              name: 'test-provider-1',
              execConfig: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: 'p' },
            },
          ],
        }),
      );
      const result = await runBin(['kubeconfig', '--profile', join(dir, 'profile.yaml')], { cwd: work });
      expect(result.code).toBe(0);
      expect(parse(result.stdout).users[0].user.exec.command).toBe('p');
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  it('fetches the profile from the hub with the KUBECONFIG credentials', async () => {
    const before = hub.requests.length;
    const result = await runBin(
      ['kubeconfig', '--namespace', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      {
        env: { KUBECONFIG: hubKubeconfig },
      },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const served = hub.requests.slice(before);
    expect(served.map((r) => `${r.method} ${r.url}`)).toEqual([`GET ${PATH_PREFIX}fleet/clusterprofiles/spoke-1`]);
    expect(served[0]!.bearer).toBe(HUB_TOKEN);
    const doc = parse(result.stdout);
    expect(doc['current-context']).toBe('fleet/spoke-1');
    expect(doc.contexts).toEqual([
      { name: 'fleet/spoke-1', context: { cluster: 'fleet/spoke-1', user: 'fleet/spoke-1' } },
    ]);
    expect(doc.clusters[0].cluster.server).toBe('https://test-server.com');
  });

  it('KUBECONFIG=a:b is merged as kubectl merges it: the context from a, the cluster and the user (a tokenFile relative to b) from b', async () => {
    const split = await writeSplitKubeconfig(join(dir, 'split'), {
      server: hub.url,
      caBase64: ca.certBase64,
      token: HUB_TOKEN,
    });
    const before = hub.requests.length;
    const result = await runBin(
      ['kubeconfig', '-n', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      {
        env: { KUBECONFIG: split.KUBECONFIG },
      },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const served = hub.requests.slice(before);
    expect(served.map((r) => `${r.method} ${r.url}`)).toEqual([`GET ${PATH_PREFIX}fleet/clusterprofiles/spoke-1`]);
    expect(served[0]!.bearer).toBe(HUB_TOKEN);
    expect(parse(result.stdout)['current-context']).toBe('fleet/spoke-1');
  });

  it('without KUBECONFIG the hub is reached through $HOME/.kube/config; with neither, the error says where it looked', async () => {
    const home = join(dir, 'home');
    await mkdir(join(home, '.kube'), { recursive: true });
    await writeFile(join(home, '.kube', 'config'), await readFile(hubKubeconfig, 'utf8'));
    const result = await runBin(
      ['kubeconfig', '-n', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      { env: { HOME: home } },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);

    const empty = join(dir, 'empty-home');
    await mkdir(empty, { recursive: true });
    const none = await runBin(
      ['kubeconfig', '-n', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      { env: { HOME: empty } },
    );
    expect(none.code).toBe(1);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain(
      `ERR_HUB_CONFIG: cannot find the hub's kubeconfig: KUBECONFIG is not set, ${join(empty, '.kube', 'config')} does not exist, not in a pod (KUBERNETES_SERVICE_HOST/PORT are not set)`,
    );
    expect(none.stderr).toContain('hint: set KUBECONFIG, or create ~/.kube/config');
  });

  it('a hub user with an exec plugin (as managed hubs and OIDC logins have) is run as kubectl runs it; a failing one is ERR_EXEC_FAILED', async () => {
    const plugin = join(dir, 'hub-login.mjs');
    await writeFile(
      plugin,
      [
        'const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);',
        "if (process.argv[2] === 'fail') { process.stderr.write('login expired\\n'); process.exit(3); }",
        "process.stderr.write('hub-login: cluster ' + (info.spec.cluster?.server ?? 'none') + '\\n');",
        `process.stdout.write(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status: { token: ${JSON.stringify(HUB_TOKEN)} } }));`,
      ].join('\n'),
    );
    const kubeconfigWithExec = async (args: string[]) => {
      const file = join(dir, `hub-exec-${args.join('-') || 'ok'}.kubeconfig`);
      await writeFile(
        file,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'hub', cluster: { server: hub.url, 'certificate-authority-data': ca.certBase64 } }],
          users: [
            {
              name: 'person',
              user: {
                exec: {
                  apiVersion: 'client.authentication.k8s.io/v1',
                  command: process.execPath,
                  args: [plugin, ...args],
                  interactiveMode: 'Never',
                  provideClusterInfo: true,
                },
              },
            },
          ],
          contexts: [{ name: 'hub', context: { cluster: 'hub', user: 'person' } }],
          'current-context': 'hub',
        }),
      );
      return file;
    };
    const before = hub.requests.length;
    const result = await runBin(
      ['kubeconfig', '-n', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      {
        env: { KUBECONFIG: await kubeconfigWithExec([]) },
      },
    );
    // The plugin's stderr reaches the user (prompts, notes) and shows it got the hub's cluster (provideClusterInfo).
    expect(result.stderr).toBe(`hub-login: cluster ${hub.url}\n`);
    expect(result.code).toBe(0);
    expect(parse(result.stdout)['current-context']).toBe('fleet/spoke-1');
    expect(hub.requests.slice(before).map((r) => r.bearer)).toEqual([HUB_TOKEN]);
    const failing = await runBin(
      ['kubeconfig', '-n', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      {
        env: { KUBECONFIG: await kubeconfigWithExec(['fail']) },
      },
    );
    expect(failing.code).toBe(1);
    expect(failing.stdout).toBe('');
    expect(failing.stderr).toContain('ERR_EXEC_FAILED');
    expect(failing.stderr).toContain('login expired');
  });

  it('reads the hub without @kubernetes/client-node (an optional peer dependency)', async () => {
    const hook = `import { registerHooks } from 'node:module';
      registerHooks({ resolve(specifier, context, next) {
        if (specifier === '@kubernetes/client-node') throw new Error('client-node was loaded');
        return next(specifier, context);
      } });`;
    const result = await runNode(
      BIN,
      ['kubeconfig', '-n', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      {
        env: { KUBECONFIG: hubKubeconfig },
        nodeArgs: ['--import', `data:text/javascript,${encodeURIComponent(hook)}`],
      },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(parse(result.stdout)['current-context']).toBe('fleet/spoke-1');
  });

  it('reports a profile the hub does not have (404 Status) clearly, exit 1, nothing on stdout', async () => {
    const result = await runBin(
      ['kubeconfig', '-n', 'fleet', '--name', 'nope', '--clusterprofile-provider-file', providers],
      {
        env: { KUBECONFIG: hubKubeconfig },
      },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      'ERR_PROFILE_NOT_FOUND: ClusterProfile fleet/nope not found on the hub: clusterprofiles.multicluster.x-k8s.io "nope" not found',
    );
    expect(result.stderr).toContain(`(at ${hub.url}${PATH_PREFIX}fleet/clusterprofiles/nope)`);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('reports a hub that refuses the credentials, and a missing hub kubeconfig', async () => {
    const badToken = join(dir, 'bad-hub.kubeconfig');
    await writeFile(
      badToken,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'hub', cluster: { server: hub.url, 'certificate-authority-data': ca.certBase64 } }],
        users: [{ name: 'u', user: { token: 'wrong' } }],
        contexts: [{ name: 'hub', context: { cluster: 'hub', user: 'u' } }],
        'current-context': 'hub',
      }),
    );
    const refused = await runBin(
      ['kubeconfig', '-n', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      { env: { KUBECONFIG: badToken } },
    );
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(
      /^ERR_HUB_REQUEST: cannot read ClusterProfile fleet\/spoke-1 from the hub \(HTTP 401\): Unauthorized/,
    );

    const missing = await runBin(
      ['kubeconfig', '-n', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      { env: { KUBECONFIG: join(dir, 'nope.kubeconfig') } },
    );
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain(
      `ERR_HUB_CONFIG: cannot read the hub's kubeconfig ${join(dir, 'nope.kubeconfig')}`,
    );
  });

  it('a hub kubeconfig with a YAML error is reported by line, without quoting its token', async () => {
    const secret = 'sha256~hubREADERs3cret';
    const broken = join(dir, 'broken-hub.kubeconfig');
    await writeFile(broken, `apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: ${secret}: oops\n`);
    const result = await runBin(
      ['kubeconfig', '-n', 'fleet', '--name', 'spoke-1', '--clusterprofile-provider-file', providers],
      { env: { KUBECONFIG: broken } },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^ERR_HUB_CONFIG: cannot load the hub's kubeconfig: .*line 6/);
    expect(result.stderr).not.toContain('hubREADER');
  });
});

describe('clusterprofile kubeconfig: bad input (built bin)', () => {
  async function fails(args: string[], code: number, stderr: string | RegExp) {
    const result = await runBin(args, { cwd: dir });
    expect(result.code).toBe(code);
    expect(result.stdout).toBe('');
    if (typeof stderr === 'string') expect(result.stderr).toContain(stderr);
    else expect(result.stderr).toMatch(stderr);
    expect(result.stderr.trimEnd().split('\n').length).toBeLessThanOrEqual(2);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  }

  it('a missing profile file', async () => {
    await fails(
      ['kubeconfig', '--profile', 'absent.yaml', '--clusterprofile-provider-file', providers],
      1,
      `ERR_PROFILE_READ: cannot read ClusterProfile file ${join(dir, 'absent.yaml')}: no such file`,
    );
  });

  it('a missing providers file (the default name)', async () => {
    await fails(
      ['kubeconfig', '--profile', 'profile.yaml'],
      1,
      `ERR_ACCESS_CONFIG_READ: failed to read access config file ${join(dir, 'clusterprofile-provider-file.json')}`,
    );
  });

  it('a providers file that is not JSON or YAML, or of the wrong shape', async () => {
    await writeFile(join(dir, 'garbage.json'), '{"providers": [');
    await fails(
      ['kubeconfig', '--profile', 'profile.yaml', '--clusterprofile-provider-file', 'garbage.json'],
      1,
      /^ERR_ACCESS_CONFIG_PARSE: failed to unmarshal access providers/,
    );
    await writeFile(join(dir, 'shape.json'), '{"providers": [{"name": 3}]}');
    await fails(
      ['kubeconfig', '--profile', 'profile.yaml', '--clusterprofile-provider-file', 'shape.json'],
      1,
      /^ERR_ACCESS_CONFIG_INVALID: .*\(at \$\.providers\[0\]\.name\)/,
    );
  });

  it('no matching provider', async () => {
    await writeFile(
      join(dir, 'unrelated.json'),
      JSON.stringify({
        providers: [{ name: 'unrelated', execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 'x' } }],
      }),
    );
    await fails(
      ['kubeconfig', '--profile', 'profile.yaml', '--clusterprofile-provider-file', 'unrelated.json'],
      1,
      'ERR_NO_MATCHING_PROVIDER: no matching cluster accessor found for cluster profile "test-cluster" (at $.status.accessProviders)\nhint: the profile lists "test-provider-1"; the providers file configures "unrelated"',
    );
  });

  it('a profile that is not a ClusterProfile', async () => {
    await writeFile(join(dir, 'pod.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n');
    await fails(
      ['kubeconfig', '--profile', 'pod.yaml', '--clusterprofile-provider-file', providers],
      1,
      /^ERR_PROFILE_INVALID: .*\(at \$\.apiVersion\)/,
    );
    await writeFile(join(dir, 'broken.yaml'), 'a: [\n');
    await fails(
      ['kubeconfig', '--profile', 'broken.yaml', '--clusterprofile-provider-file', providers],
      1,
      /^ERR_PROFILE_PARSE: /,
    );
  });

  it('usage errors exit 2', async () => {
    await fails(['kubeconfig'], 2, /^ERR_USAGE: pass --profile FILE, or --namespace NS --name NAME/);
    await fails(['kubeconfig', '--profile'], 2, /^ERR_USAGE: /);
    await fails(['nonsense'], 2, /^ERR_USAGE: unknown command "nonsense"/);
  });
});
