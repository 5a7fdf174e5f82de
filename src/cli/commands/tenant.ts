/**
 * `clusterprofile tenant nonce|generate|accept`: the manual tenant-cert flow of the Liqo docs, with the same
 * documents, for when no issuer is reachable over the network (people carry the documents across):
 * ```sh
 * provider$ clusterprofile tenant nonce --data-dir DIR --cluster-id consumer-1 > nonce.txt
 * consumer$ clusterprofile tenant generate --key-file consumer.key --cluster-id consumer-1 \
 *             --provider-cluster-id provider-1 --nonce "$(cat nonce.txt)" > tenant.yaml
 * provider$ clusterprofile tenant accept --data-dir DIR tenant.yaml > identity.yaml
 * consumer$ clusterprofile identity import identity.yaml --key-file consumer.key
 * ```
 * `nonce` and `accept` take the data dir's lock: they refuse to run while `issuer serve` uses the same data dir
 * (use its HTTPS API then). Liqo-shaped Tenants are accepted with --liqo-compat and answered Liqo-shaped.
 *
 * `tenant apply --to-cluster` is the consumer side of the declarative flow instead: it writes this cluster's Tenant
 * resource on the provider cluster and waits for the issuer (`issuer serve --reconcile-tenants`) to answer it.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { stringify } from 'yaml';
import { parseDocument } from '../../base/document.js';
import { CredentialsError } from '../../base/errors.js';
import {
  LIQO_API_VERSION,
  checkClusterId,
  encodeBase64,
  loadClusterFlow,
  loadTenantBuilder,
  readKeyFile,
  parsePrivateKeyPem,
  publicKeyPem,
  signBytes,
  type LiqoTenantDocument,
} from '../../providers/tenant-cert/index.js';
import { issuerSettings, loadIssuer } from './issuer.js';
import { providerCluster } from '../provider-cluster.js';
import { parseDuration } from '../duration.js';
import { readInput } from '../input.js';
import { actionsUsage, requiredFlag, type ActionSpec, type CommandArgs, type CommandContext } from '../command.js';

export const actions = {
  nonce: {
    usage: '$0 tenant nonce --data-dir DIR --cluster-id CONSUMER_ID [--ttl 1h] [--provider-cluster-id PROVIDER_ID]',
    describe: 'Provider: issue a nonce for a trusted consumer (stdout), to carry to it.',
    flags: ['data-dir', 'cluster-id', 'ttl', 'provider-cluster-id'],
  },
  generate: {
    usage:
      '$0 tenant generate --key-file KEY --cluster-id CONSUMER_ID --provider-cluster-id PROVIDER_ID --nonce NONCE [--group G]... [--liqo [--proxy-url URL]]',
    describe: 'Consumer: answer the nonce with a Tenant (a CSR signed over nonce and cluster IDs) on stdout.',
    flags: ['key-file', 'cluster-id', 'provider-cluster-id', 'nonce', 'group', 'liqo', 'proxy-url'],
  },
  accept: {
    usage:
      '$0 tenant accept --data-dir DIR [FILE|-] [--api-server-url URL] [--api-server-ca FILE] [--cert-lifetime 24h] [--group G]... [--liqo-compat]',
    describe: 'Provider: check a Tenant and answer it with an Identity (the signed certificate) on stdout.',
    flags: [
      'data-dir',
      'provider-cluster-id',
      'api-server-url',
      'api-server-ca',
      'cert-lifetime',
      'group',
      'signer',
      'kubeconfig',
      'context',
      'liqo-compat',
    ],
  },
  apply: {
    usage:
      '$0 tenant apply --to-cluster --key-file KEY --cluster-id CONSUMER_ID --provider-cluster-id PROVIDER_ID --namespace NS [--provider-kubeconfig FILE] [--provider-context NAME] [--timeout 60s] [--force]',
    describe:
      "Consumer: create or renew this cluster's Tenant resource on the provider cluster and wait for its Identity (the declarative flow).",
    flags: [
      'to-cluster',
      'key-file',
      'cluster-id',
      'provider-cluster-id',
      'namespace',
      'provider-kubeconfig',
      'provider-context',
      'timeout',
      'force',
    ],
  },
} as const satisfies Record<string, ActionSpec>;

export function builder(parser: Argv): Argv<object> {
  return parser
    .usage(
      actionsUsage(
        actions,
        'The manual tenant-cert flow: the provider issues a nonce, the consumer answers a Tenant, the provider answers an Identity.',
      ),
    )
    .positional('action', { type: 'string', choices: Object.keys(actions), describe: 'what to do' })
    .positional('file', { type: 'string', describe: 'accept: the Tenant (YAML or JSON; "-" or absent: stdin)' })
    .option('data-dir', { type: 'string', requiresArg: true, describe: "nonce/accept: the issuer's data dir" })
    .option('cluster-id', { type: 'string', requiresArg: true, describe: 'nonce/generate: the consumer cluster ID' })
    .option('provider-cluster-id', {
      type: 'string',
      requiresArg: true,
      describe:
        'generate: the provider cluster ID; nonce/accept: the provider a data dir without an issuer yet belongs to',
    })
    .option('ttl', {
      type: 'string',
      default: '1h',
      requiresArg: true,
      describe: 'nonce: how long it stays valid (the documents travel by hand)',
    })
    .option('key-file', {
      type: 'string',
      requiresArg: true,
      describe: "generate: the consumer's private key (PKCS#8 PEM)",
    })
    .option('nonce', { type: 'string', requiresArg: true, describe: 'generate: the nonce the provider issued' })
    .option('group', {
      type: 'string',
      array: true,
      requiresArg: true,
      describe:
        'generate: O values to request (the Kubernetes signer needs exactly the granted ones); accept: policy groups',
    })
    .option('liqo', {
      type: 'boolean',
      default: false,
      describe: 'generate: a Liqo-shaped Tenant (signature over the nonce alone; O=liqo.io first, then any --group)',
    })
    .option('proxy-url', {
      type: 'string',
      requiresArg: true,
      describe: 'generate --liqo: the proxy this cluster reaches the provider through (the Identity carries it back)',
    })
    .option('api-server-url', {
      type: 'string',
      requiresArg: true,
      describe: 'accept: the API server URL put in the Identity',
    })
    .option('api-server-ca', { type: 'string', requiresArg: true, describe: "accept: PEM file of the API server's CA" })
    .option('cert-lifetime', {
      type: 'string',
      default: '24h',
      requiresArg: true,
      describe: 'accept: certificate lifetime',
    })
    .option('signer', {
      type: 'string',
      choices: ['embedded', 'kubernetes'],
      default: 'embedded',
      describe: 'accept: who signs',
    })
    .option('kubeconfig', { type: 'string', requiresArg: true, describe: 'accept --signer kubernetes: kubeconfig' })
    .option('context', {
      type: 'string',
      requiresArg: true,
      describe: 'accept --signer kubernetes: kubeconfig context',
    })
    .option('liqo-compat', { type: 'boolean', default: false, describe: 'accept: also accept Liqo Tenants' })
    .option('to-cluster', {
      type: 'boolean',
      default: false,
      describe: 'apply: write the Tenant resource on the provider cluster (required: the one mode of apply)',
    })
    .option('namespace', {
      type: 'string',
      requiresArg: true,
      describe: "apply: the namespace of the Tenants on the provider cluster (default: the context's)",
    })
    .option('provider-kubeconfig', {
      type: 'string',
      requiresArg: true,
      describe:
        'apply: kubeconfig for the provider cluster (default: KUBECONFIG, else ~/.kube/config, else in-cluster)',
    })
    .option('provider-context', { type: 'string', requiresArg: true, describe: 'apply: its context' })
    .option('timeout', {
      type: 'string',
      default: '60s',
      requiresArg: true,
      describe: 'apply: how long to wait for each answer of the issuer',
    })
    .option('force', {
      type: 'boolean',
      default: false,
      describe: 'apply: renew even before the renewal point (2/3 of the lifetime)',
    });
}

const required = (args: CommandArgs, flag: string, action: string): string =>
  requiredFlag(args, flag, `tenant ${action}`);

/** nonce/accept: --provider-cluster-id, which a data dir needs until an issuer has been set up in it. */
function providerClusterID(args: CommandArgs): string | undefined {
  const id = args['provider-cluster-id'];
  return typeof id === 'string' ? checkClusterId(id, '--provider-cluster-id') : undefined;
}

async function readDocument(file: string | undefined, ctx: CommandContext): Promise<unknown> {
  const { text, source } = await readInput(
    file,
    ctx,
    (cause, path) =>
      new CredentialsError('ERR_TENANT_INPUT', `cannot read ${path}: ${(cause as Error).message}`, { path, cause }),
  );
  return parseDocument(text, { source, code: 'ERR_TENANT_INVALID_DOCUMENT', message: `${source} is not YAML or JSON` });
}

export async function run(args: CommandArgs, ctx: CommandContext): Promise<number> {
  const action = String(args['action']);
  const groups = Array.isArray(args['group']) ? args['group'].map(String) : [];
  if (action === 'generate') {
    const consumerClusterID = checkClusterId(required(args, 'cluster-id', 'generate'), '--cluster-id');
    const providerClusterID = checkClusterId(
      required(args, 'provider-cluster-id', 'generate'),
      '--provider-cluster-id',
    );
    const nonce = required(args, 'nonce', 'generate').trim();
    const keyFile = resolve(ctx.cwd, required(args, 'key-file', 'generate'));
    const keyPem = await readFile(keyFile, 'utf8').catch((cause: unknown) => {
      throw new CredentialsError('ERR_TENANT_INPUT', `cannot read --key-file ${keyFile}: ${(cause as Error).message}`, {
        path: keyFile,
      });
    });
    const privateKey = parsePrivateKeyPem(keyPem, keyFile, { flag: '--key-file', code: 'ERR_TENANT_CERT_KEY_FILE' });
    const { buildCsr, buildTenant } = await loadTenantBuilder();
    let document: unknown;
    if (args['liqo'] === true) {
      const csr = await buildCsr(privateKey, {
        commonName: consumerClusterID,
        // Liqo's provider checks that the first O is liqo.io, and its authorizer admits control-plane users by it.
        organizations: ['liqo.io', ...groups.filter((group) => group !== 'liqo.io')],
      });
      const proxyURL = typeof args['proxy-url'] === 'string' ? args['proxy-url'] : undefined;
      const liqo: LiqoTenantDocument = {
        apiVersion: LIQO_API_VERSION,
        kind: 'Tenant',
        metadata: { name: consumerClusterID, labels: { 'liqo.io/remote-cluster-id': consumerClusterID } },
        spec: {
          clusterID: consumerClusterID,
          csr: encodeBase64(csr.pem),
          publicKey: encodeBase64(publicKeyPem(privateKey)),
          signature: encodeBase64(signBytes(privateKey, Buffer.from(nonce, 'utf8'))),
          ...(proxyURL === undefined ? {} : { proxyURL }),
        },
      };
      document = liqo;
    } else {
      if (args['proxy-url'] !== undefined) {
        throw new CredentialsError('ERR_USAGE', '--proxy-url goes with --liqo (our Tenant carries no proxy)', {
          path: '--proxy-url',
        });
      }
      document = await buildTenant({ privateKey, consumerClusterID, providerClusterID, nonce, organizations: groups });
    }
    ctx.io.stdout.write(stringify(document));
    return 0;
  }

  if (action === 'apply') return apply(args, ctx);

  const dataDir = required(args, 'data-dir', action);
  const { openIssuer } = await loadIssuer();
  const log = (line: string) => ctx.io.stderr.write(`${line}\n`);
  if (action === 'nonce') {
    const consumerClusterID = checkClusterId(required(args, 'cluster-id', 'nonce'), '--cluster-id');
    const ttlMs = parseDuration(String(args['ttl']), {
      flag: '--ttl',
      min: 5000,
      max: 7 * 86_400_000,
      code: 'ERR_ISSUER_CONFIG',
    });
    const opened = await openIssuer(issuerSettings({ ...args, 'data-dir': dataDir }, providerClusterID(args)), {
      env: ctx.env,
      now: () => new Date(),
      cwd: ctx.cwd,
      holder: 'tenant nonce',
    });
    try {
      const consumer = await opened.issuer.trusted(consumerClusterID, '--cluster-id');
      const response = await opened.issuer.nonceFor(consumer, ttlMs, true);
      log(
        `nonce for ${consumerClusterID} from provider ${response.providerClusterID}, valid until ${response.expiresAt}; ` +
          `the certificate will say CN=${response.subject.commonName}${response.subject.organizations.map((o) => `, O=${o}`).join('')}`,
      );
      ctx.io.stdout.write(`${response.nonce}\n`);
    } finally {
      await opened.close();
    }
    return 0;
  }
  if (action === 'accept') {
    const document = await readDocument(typeof args['file'] === 'string' ? args['file'] : undefined, ctx);
    const opened = await openIssuer(issuerSettings({ ...args, 'nonce-ttl': '60s' }, providerClusterID(args)), {
      env: ctx.env,
      now: () => new Date(),
      cwd: ctx.cwd,
      holder: 'tenant accept',
      log,
    });
    try {
      const accepted = await opened.issuer.acceptTenant(document);
      ctx.io.stdout.write(stringify(accepted.identity));
    } finally {
      await opened.close();
    }
    return 0;
  }
  throw new CredentialsError('ERR_USAGE', `unknown action ${action}`);
}

/** `tenant apply --to-cluster`: the consumer side of the declarative flow (../../providers/tenant-cert/consumer/cluster-flow.ts). */
async function apply(args: CommandArgs, ctx: CommandContext): Promise<number> {
  if (args['to-cluster'] !== true) {
    throw new CredentialsError(
      'ERR_USAGE',
      'tenant apply needs --to-cluster (it writes the Tenant resource on the provider cluster)',
      { path: '--to-cluster' },
    );
  }
  const consumerClusterID = checkClusterId(required(args, 'cluster-id', 'apply'), '--cluster-id');
  const providerClusterID = checkClusterId(required(args, 'provider-cluster-id', 'apply'), '--provider-cluster-id');
  const keyFile = resolve(ctx.cwd, required(args, 'key-file', 'apply'));
  const { keyPem } = readKeyFile(keyFile);
  const privateKey = parsePrivateKeyPem(keyPem, keyFile, { flag: '--key-file', code: 'ERR_TENANT_CERT_KEY_FILE' });
  const timeoutMs = parseDuration(String(args['timeout'] ?? '60s'), {
    flag: '--timeout',
    min: 1000,
    max: 3_600_000,
    code: 'ERR_USAGE',
  });
  const cluster = await providerCluster(args, ctx, 'tenant apply --to-cluster');
  try {
    const { applyTenant } = await loadClusterFlow();
    const applied = await applyTenant({
      send: cluster.send,
      namespace: cluster.namespace,
      privateKey,
      consumerClusterID,
      providerClusterID,
      timeoutMs,
      force: args['force'] === true,
      now: () => new Date(),
    });
    ctx.io.stderr.write(
      applied.renewed
        ? `Tenant ${cluster.namespace}/${applied.tenant} answered: Identity ${applied.identity}, Secret ${applied.secret ?? '-'}, certificate valid until ${applied.notAfter ?? '?'} (renew after ${applied.renewAfter ?? '?'})\n`
        : `Tenant ${cluster.namespace}/${applied.tenant}: the certificate is before its renewal point (${applied.renewAfter ?? '?'}); nothing asked (--force renews now)\n`,
    );
    ctx.io.stdout.write(`${applied.identity}\n`);
    return 0;
  } finally {
    await cluster.close();
  }
}
