/**
 * deploy/ on the real control plane: each overlay, rendered by `kubectl kustomize`, is accepted by kube-apiserver
 * with server-side apply (twice: the second apply changes nothing and conflicts with nothing), the restricted Pod
 * Security level of the Namespace admits the Deployment's pod (a server-side dry run: nothing runs pods here), and the
 * issuer's ServiceAccount holds exactly the rights the issuer needs — checked with `kubectl auth can-i --as` for every
 * verb it uses and for samples it must not have (other namespaces, cluster-wide Secrets, RBAC, CSRs for the embedded
 * CA). The example kustomization of deploy/examples/issuer (an overlay taken as it is, the image set by `images:`)
 * renders with its image and settings and is accepted the same way; one whose `images:` names the wrong image fails
 * the render check loudly. The control plane is at least the minimum Kubernetes version deploy/README.md states.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { e2eContext, kubectl, tempFile, type ExecResult } from '../helpers/controlplane-e2e.js';
import { REPO } from './fixtures/tenant-cert-issuer.js';

const NAMESPACE = 'clusterprofile-system';
const ACCOUNT = `system:serviceaccount:${NAMESPACE}:clusterprofile-issuer`;
const MANAGER = 'e2e-deploy';

function admin(args: string[], input?: string): Promise<ExecResult> {
  const { controlPlane } = e2eContext();
  return kubectl(controlPlane.adminKubeconfig, args, input === undefined ? {} : { input });
}

async function adminOk(args: string[], input?: string): Promise<ExecResult> {
  const result = await admin(args, input);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result;
}

async function rendered(overlay: string): Promise<string> {
  return (await adminOk(['kustomize', `${REPO}deploy/overlays/${overlay}`])).stdout;
}

const EXAMPLE = `${REPO}deploy/examples/issuer`;
/** The image deploy/base names, for a kustomization's `images:` to set. */
const BASE_IMAGE = 'clusterprofile-issuer';

/**
 * The issuer Deployment's image in a rendered kustomization, which must be one the kustomization set: still the
 * base's name means its `images:` entry matched nothing (kustomize says nothing), and that is an error here.
 */
function issuerImage(text: string, where: string): string {
  const deployment = parseAllDocuments(text)
    .map((document) => document.toJS() as { kind?: string; metadata?: { name?: string }; spec?: any })
    .find((object) => object.kind === 'Deployment' && object.metadata?.name === 'clusterprofile-issuer');
  const image = deployment?.spec?.template?.spec?.containers?.[0]?.image as string | undefined;
  if (image === undefined) throw new Error(`${where}: renders no clusterprofile-issuer Deployment with an image`);
  if (image === BASE_IMAGE) {
    throw new Error(
      `${where}: the issuer still runs image "${BASE_IMAGE}": the kustomization's images: entry matched nothing — its name must be "${BASE_IMAGE}"`,
    );
  }
  return image;
}

/** `kubectl auth can-i VERB RESOURCE [-n NS]` as the issuer's ServiceAccount: true for yes. */
async function can(
  verb: string,
  resource: string,
  options: { namespace?: string; subresource?: string; all?: boolean } = {},
): Promise<boolean> {
  const args = ['auth', 'can-i', verb, resource, `--as=${ACCOUNT}`];
  if (options.all === true) args.push('--all-namespaces');
  else if (options.namespace !== undefined) args.push('-n', options.namespace);
  if (options.subresource !== undefined) args.push(`--subresource=${options.subresource}`);
  const result = await admin(args);
  const answer = result.stdout.trim();
  expect(['yes', 'no'], `${args.join(' ')}: ${result.stderr}`).toContain(answer);
  return answer === 'yes';
}

/**
 * The same question as a SubjectAccessReview with the group spelled out: for the Tenant/Identity resources, whose
 * CRDs may not be installed (`kubectl auth can-i` resolves a type through discovery and says no to unknown ones).
 */
async function canOnGroup(
  verb: string,
  group: string,
  resource: string,
  namespace: string,
  subresource?: string,
): Promise<boolean> {
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: ACCOUNT,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${NAMESPACE}`, 'system:authenticated'],
      resourceAttributes: { verb, group, resource, namespace, ...(subresource === undefined ? {} : { subresource }) },
    },
  };
  const result = await adminOk(['create', '-o', 'json', '-f', '-'], JSON.stringify(review));
  return JSON.parse(result.stdout).status.allowed === true;
}

/**
 * What every overlay must grant in the issuer's namespace — the state backend's verbs (deploy/base/issuer-state-rbac.yaml:
 * ConfigMaps for trust records and spent nonces, the CA and nonce key Secrets by name, creating them) and the reconciler's Secrets
 * (deploy/base/tenant-flow-rbac.yaml: the Identities' kubeconfig Secrets)...
 */
const NEEDED: Array<[string, string]> = [
  ...['get', 'list', 'create', 'delete'].map((verb) => [verb, 'configmaps'] as [string, string]),
  ['get', 'secret/clusterprofile-issuer-client-ca'],
  ['get', 'secret/clusterprofile-issuer-serving-ca'],
  ['get', 'secret/clusterprofile-issuer-nonce-key'],
  ['create', 'secrets'],
  ['update', 'secrets'],
];
/** ...and the reconciler's: [verb, group, resource, subresource?]. */
const NEEDED_ON_GROUPS: Array<[string, string, string, string?]> = [
  ['get', 'credentials.clusterprofile.io', 'tenants'],
  ['list', 'credentials.clusterprofile.io', 'tenants'],
  ['watch', 'credentials.clusterprofile.io', 'tenants'],
  ['patch', 'credentials.clusterprofile.io', 'tenants', 'status'],
  ['get', 'credentials.clusterprofile.io', 'identities'],
  ['create', 'credentials.clusterprofile.io', 'identities'],
  ['update', 'credentials.clusterprofile.io', 'identities'],
  ['patch', 'credentials.clusterprofile.io', 'identities', 'status'],
];

/** What no overlay may grant. */
async function expectNothingBeyond(): Promise<void> {
  expect(await can('get', 'secrets', { namespace: 'kube-system' })).toBe(false);
  // Not even in its own namespace may it read Secrets other than its two CAs.
  expect(await can('get', 'secrets', { namespace: NAMESPACE })).toBe(false);
  expect(await can('list', 'secrets', { namespace: NAMESPACE })).toBe(false);
  expect(await can('get', 'secret/kubeconfig-some-tenant', { namespace: NAMESPACE })).toBe(false);
  expect(await can('list', 'secrets', { all: true })).toBe(false);
  expect(await can('list', 'configmaps', { namespace: 'default' })).toBe(false);
  expect(await can('create', 'pods', { namespace: NAMESPACE })).toBe(false);
  expect(await can('create', 'serviceaccounts/token', { namespace: NAMESPACE })).toBe(false);
  expect(await can('create', 'clusterrolebindings')).toBe(false);
  expect(await can('update', 'roles', { namespace: NAMESPACE })).toBe(false);
  expect(await canOnGroup('list', 'credentials.clusterprofile.io', 'tenants', 'default')).toBe(false);
  expect(await canOnGroup('update', 'credentials.clusterprofile.io', 'tenants', NAMESPACE)).toBe(false);
}

afterAll(async () => {
  // Leave the control plane as found for the next e2e file.
  // The CRDs stay: other e2e files (the declarative flow) apply them too, and a CRD still terminating would fail them.
  for (const text of [await rendered('csr-signer'), (await adminOk(['kustomize', EXAMPLE])).stdout]) {
    const withoutCrds = text
      .split(/^---$/m)
      .filter((document) => !/^kind: CustomResourceDefinition$/m.test(document))
      .join('---\n');
    await admin(['delete', '--ignore-not-found', '--wait=false', '-f', '-'], withoutCrds);
  }
});

describe('the control plane', () => {
  it('is at least the minimum Kubernetes version deploy/README.md states', async () => {
    const readme = await readFile(path.join(REPO, 'deploy', 'README.md'), 'utf8');
    const stated = /\*\*Kubernetes >= (\d+)\.(\d+)\.\*\*/.exec(readme);
    expect(stated, 'deploy/README.md states "**Kubernetes >= X.Y.**"').not.toBeNull();
    const version = JSON.parse((await adminOk(['version', '-o', 'json'])).stdout) as {
      serverVersion: { major: string; minor: string; gitVersion: string };
    };
    const [major, minor] = [Number(version.serverVersion.major), Number.parseInt(version.serverVersion.minor, 10)];
    const [neededMajor, neededMinor] = [Number(stated![1]), Number(stated![2])];
    expect(
      major > neededMajor || (major === neededMajor && minor >= neededMinor),
      `kube-apiserver ${version.serverVersion.gitVersion} is older than the stated minimum ${neededMajor}.${neededMinor}`,
    ).toBe(true);
  });
});

describe.each(['embedded-ca', 'csr-signer'])('deploy/overlays/%s on kube-apiserver', (overlay) => {
  it('is accepted with server-side apply, twice without conflict; Pod Security (restricted) admits its pods', async () => {
    const text = await rendered(overlay);
    const first = await admin(['apply', '--server-side', `--field-manager=${MANAGER}`, '-f', '-'], text);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toContain('would violate PodSecurity');
    expect(first.stdout).toContain('deployment.apps/clusterprofile-issuer serverside-applied');
    const again = await admin(['apply', '--server-side', `--field-manager=${MANAGER}`, '-f', '-'], text);
    expect(again.code, again.stderr).toBe(0);

    const present =
      (await adminOk(['get', 'namespace', NAMESPACE, '-o', 'name'])).stdout +
      (
        await adminOk([
          'get',
          'serviceaccount,deployment,service,poddisruptionbudget,networkpolicy,role,rolebinding,configmap',
          '-n',
          NAMESPACE,
          '-o',
          'name',
        ])
      ).stdout;
    for (const name of [
      'namespace/clusterprofile-system',
      'serviceaccount/clusterprofile-issuer',
      'deployment.apps/clusterprofile-issuer',
      'service/clusterprofile-issuer',
      'poddisruptionbudget.policy/clusterprofile-issuer',
      'networkpolicy.networking.k8s.io/clusterprofile-issuer',
      'role.rbac.authorization.k8s.io/clusterprofile-issuer-state',
      'rolebinding.rbac.authorization.k8s.io/clusterprofile-issuer-state',
      'role.rbac.authorization.k8s.io/clusterprofile-issuer-tenant-flow',
    ]) {
      expect(present).toContain(name);
    }
    const deployment = JSON.parse(
      (await adminOk(['get', 'deployment/clusterprofile-issuer', '-n', NAMESPACE, '-o', 'json'])).stdout,
    );
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.template.spec.containers[0].args).toContain(
      `--signer=${overlay === 'csr-signer' ? 'kubernetes' : 'embedded'}`,
    );

    // No ReplicaSet controller runs here (kube-controller-manager has the CSR controllers only): the Deployment's
    // pod template is submitted as a Pod with a server-side dry run instead, so admission — Pod Security in enforce
    // mode (restricted) among it — judges the very pod a ReplicaSet would create.
    const template = deployment.spec.template;
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'issuer-admission-probe', namespace: NAMESPACE, labels: template.metadata.labels },
      spec: template.spec,
    };
    const admitted = await admin(['create', '--dry-run=server', '-f', '-'], JSON.stringify(pod));
    expect(admitted.code, admitted.stderr).toBe(0);
    expect(admitted.stderr).not.toContain('PodSecurity');
    // The same pod with its container hardening removed is refused: the level is enforced, not just labelled.
    const weakened = structuredClone(pod);
    delete weakened.spec.containers[0].securityContext;
    const refused = await admin(['create', '--dry-run=server', '-f', '-'], JSON.stringify(weakened));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('violates PodSecurity "restricted');
  });

  it('the ServiceAccount can do what the issuer needs in its namespace, and nothing beyond', async () => {
    for (const [verb, resource] of NEEDED) {
      expect(await can(verb, resource, { namespace: NAMESPACE }), `${verb} ${resource}`).toBe(true);
    }
    for (const [verb, group, resource, subresource] of NEEDED_ON_GROUPS) {
      expect(
        await canOnGroup(verb, group, resource, NAMESPACE, subresource),
        `${verb} ${resource}.${group}${subresource === undefined ? '' : `/${subresource}`}`,
      ).toBe(true);
    }
    await expectNothingBeyond();
    const signs = overlay === 'csr-signer';
    expect(await can('create', 'certificatesigningrequests.certificates.k8s.io')).toBe(signs);
    expect(await can('get', 'certificatesigningrequests.certificates.k8s.io')).toBe(signs);
    expect(await can('update', 'certificatesigningrequests.certificates.k8s.io', { subresource: 'approval' })).toBe(
      signs,
    );
    // Even the CSR signer cannot list CSRs (it reads back only the ones it created, by name).
    expect(await can('list', 'certificatesigningrequests.certificates.k8s.io')).toBe(false);
  });
});

describe('switching back to the embedded CA', () => {
  it("removing the csr-signer overlay's ClusterRoleBinding takes the CSR rights away again", async () => {
    await adminOk(['delete', 'clusterrolebinding/clusterprofile-issuer', 'clusterrole/clusterprofile-issuer']);
    await expect
      .poll(() => can('create', 'certificatesigningrequests.certificates.k8s.io'), { timeout: 10_000 })
      .toBe(false);
    const text = await rendered('embedded-ca');
    const result = await admin(['apply', '--server-side', `--field-manager=${MANAGER}`, '-f', '-'], text);
    expect(result.code, result.stderr).toBe(0);
    expect(await can('create', 'secrets', { namespace: NAMESPACE })).toBe(true);
  });
});

describe('deploy/examples/issuer: a kustomization of ones own above a shipped overlay', () => {
  it('renders with the image its images: entry sets and its settings merged, and is accepted with server-side apply', async () => {
    const text = (await adminOk(['kustomize', EXAMPLE])).stdout;
    expect(issuerImage(text, 'deploy/examples/issuer')).toBe('registry.example/clusterprofile:0.1.0');
    const config = parseAllDocuments(text)
      .map(
        (document) => document.toJS() as { kind?: string; metadata?: { name?: string }; data?: Record<string, string> },
      )
      .find(
        (object) => object.kind === 'ConfigMap' && object.metadata?.name?.startsWith('clusterprofile-issuer-config'),
      );
    expect(config?.data).toEqual({
      PROVIDER_CLUSTER_ID: 'provider-east',
      API_SERVER_URL: 'https://east.k8s.example:6443',
    });
    for (let round = 0; round < 2; round += 1) {
      const applied = await admin(['apply', '--server-side', `--field-manager=${MANAGER}`, '-f', '-'], text);
      expect(applied.code, applied.stderr).toBe(0);
    }
    const deployment = JSON.parse(
      (await adminOk(['get', 'deployment/clusterprofile-issuer', '-n', NAMESPACE, '-o', 'json'])).stdout,
    );
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.spec.template.spec.containers[0].image).toBe('registry.example/clusterprofile:0.1.0');
    // The preStop sleep action survived admission: this API server knows it (the minimum version's reason).
    expect(deployment.spec.template.spec.containers[0].lifecycle.preStop).toEqual({ sleep: { seconds: 5 } });
    expect(deployment.spec.template.spec.containers[0].args).toContain('--signer=embedded');
  });

  it('one whose images: entry names another image fails the render check, naming the name it must use', async () => {
    const example = await readFile(path.join(EXAMPLE, 'kustomization.yaml'), 'utf8');
    // A copy elsewhere (kustomize takes bases by relative path only), with the image's name mistyped.
    const file = await tempFile('kustomization.yaml', '');
    const dir = path.dirname(file);
    const overlay = path.relative(dir, path.join(REPO, 'deploy', 'overlays', 'embedded-ca'));
    const wrong = example
      .replace('- name: clusterprofile-issuer\n', '- name: clusterprofile\n')
      .replace('\n  - ../../overlays/embedded-ca\n', `\n  - ${overlay}\n`);
    expect(wrong).not.toMatch(/- name: clusterprofile-issuer$/m);
    expect(wrong).toContain(`  - ${overlay}\n`);
    await writeFile(file, wrong);
    const text = (await adminOk(['kustomize', dir])).stdout;
    // kustomize itself is silent about it: the render succeeds, with the base's image name.
    expect(text).toContain(`image: ${BASE_IMAGE}\n`);
    expect(() => issuerImage(text, 'wrong-name overlay')).toThrow(
      'wrong-name overlay: the issuer still runs image "clusterprofile-issuer": the kustomization\'s images: entry matched nothing — its name must be "clusterprofile-issuer"',
    );
  });
});
