/**
 * `clusterprofile issuer serve|trust|untrust|list`: the provider side of tenant-cert.
 *
 * @example
 * ```sh
 * clusterprofile issuer trust --data-dir /var/lib/issuer --cluster-id consumer-1 --public-key consumer-1.pub
 * clusterprofile issuer serve --data-dir /var/lib/issuer --listen 0.0.0.0:8443 --cluster-id provider-1
 * ```
 * `serve` prints one line on stdout when it listens — its URL — and logs one line per decision on stderr; SIGINT or
 * SIGTERM stop it cleanly (exit 0).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { CredentialsError } from '../../core/errors.js';
import { loadKubeAccess } from '../../kube/kubeconfig.js';
import { checkClusterId, keyAlgorithm, loadIssuer, parsePublicKey, spkiDer, type IssuerSettings, type OpenIssuer } from '../../providers/tenant-cert/index.js';
import { parseDuration } from '../duration.js';
import { readInput } from '../input.js';
import { actionsUsage, requiredFlag, type ActionSpec, type CommandArgs, type CommandContext } from '../command.js';

export const actions = {
  serve: {
    usage: '$0 issuer serve --data-dir DIR --listen HOST:PORT --cluster-id PROVIDER_ID [options]',
    describe: 'Serve the issuer over HTTPS: nonces, and Tenants of trusted consumers answered with Identities.',
    flags: ['data-dir', 'cluster-id', 'listen', 'san', 'api-server-url', 'api-server-ca', 'cert-lifetime', 'nonce-ttl', 'signer', 'kubeconfig', 'context', 'signer-timeout', 'group', 'liqo-compat', 'reconcile-tenants', 'namespace'],
  },
  trust: {
    usage: '$0 issuer trust --data-dir DIR --cluster-id CONSUMER_ID --public-key FILE [--group G]...',
    describe: "Trust a consumer cluster's public key (creates the data dir if needed).",
    flags: ['data-dir', 'cluster-id', 'public-key', 'group'],
  },
  untrust: {
    usage: '$0 issuer untrust --data-dir DIR --cluster-id CONSUMER_ID',
    describe: 'Stop trusting a consumer cluster (certificates already issued stay valid until they expire).',
    flags: ['data-dir', 'cluster-id'],
  },
  list: {
    usage: '$0 issuer list --data-dir DIR',
    describe: 'List the trusted consumers: cluster ID, key algorithm, fingerprint, groups, since.',
    flags: ['data-dir'],
  },
} as const satisfies Record<string, ActionSpec>;
const MINUTE = 60_000;
const DAY = 1440 * MINUTE;

export function builder(parser: Argv): Argv<any> {
  return parser
    .usage(
      actionsUsage(actions, 'The tenant-cert issuer: hands out nonces and signs short-lived client certificates for trusted consumer clusters.'),
    )
    .positional('action', { type: 'string', choices: Object.keys(actions), describe: 'what to do' })
    .option('data-dir', { type: 'string', demandOption: true, requiresArg: true, describe: 'the issuer state (0700; created on first serve)' })
    .option('cluster-id', { type: 'string', requiresArg: true, describe: 'serve: this provider cluster\'s ID; trust/untrust: the consumer\'s' })
    .option('listen', { type: 'string', default: '127.0.0.1:8443', requiresArg: true, describe: 'serve: HOST:PORT (port 0: any free port)' })
    .option('san', { type: 'string', array: true, requiresArg: true, describe: 'serve: extra DNS names / IPs for the HTTPS certificate' })
    .option('api-server-url', { type: 'string', requiresArg: true, describe: 'the API server URL put in Identities' })
    .option('api-server-ca', { type: 'string', requiresArg: true, describe: 'PEM file of the API server\'s CA, put in Identities' })
    .option('cert-lifetime', { type: 'string', default: '24h', requiresArg: true, describe: 'lifetime of issued certificates (5m..365d)' })
    .option('nonce-ttl', { type: 'string', default: '60s', requiresArg: true, describe: 'how long a nonce may wait for its Tenant (5s..1h)' })
    .option('signer', { type: 'string', choices: ['embedded', 'kubernetes'], default: 'embedded', describe: 'who signs: the data dir\'s client CA, or the Kubernetes CSR API' })
    .option('kubeconfig', { type: 'string', requiresArg: true, describe: '--signer kubernetes, --reconcile-tenants: kubeconfig (default: KUBECONFIG, else ~/.kube/config, else in-cluster)' })
    .option('context', { type: 'string', requiresArg: true, describe: '--signer kubernetes, --reconcile-tenants: kubeconfig context' })
    .option('signer-timeout', { type: 'string', default: '30s', requiresArg: true, describe: '--signer kubernetes: wait this long for the certificate' })
    .option('group', {
      type: 'string',
      array: true,
      requiresArg: true,
      describe: 'serve: a group (O) every consumer gets, {clusterID} is replaced; trust: a group for this consumer only. Never system:*',
    })
    .option('liqo-compat', { type: 'boolean', default: false, describe: 'serve: also accept Liqo Tenants (signature over the nonce alone: weaker)' })
    .option('reconcile-tenants', { type: 'boolean', default: false, describe: 'serve: also answer the Tenant resources of --namespace on the cluster of --kubeconfig/--context (the declarative flow)' })
    .option('namespace', { type: 'string', requiresArg: true, describe: 'serve --reconcile-tenants: the namespace of the Tenants (default: the kubeconfig context\'s or the pod\'s)' })
    .option('public-key', { type: 'string', requiresArg: true, describe: 'trust: the consumer\'s public key, PEM SPKI ("-": stdin)' });
}

const required = (args: CommandArgs, flag: string, action: string): string => requiredFlag(args, flag, `issuer ${action}`);

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : typeof value === 'string' ? [value] : [];
}

/** SHA256:<base64> of the SPKI DER, as `ssh-keygen -l` prints fingerprints. */
export function fingerprint(der: Buffer): string {
  return `SHA256:${createHash('sha256').update(der).digest('base64').replace(/=+$/, '')}`;
}

export function issuerSettings(args: CommandArgs, providerClusterID: string | undefined): IssuerSettings {
  return {
    dataDir: String(args['data-dir']),
    ...(providerClusterID === undefined ? {} : { providerClusterID }),
    ...(typeof args['api-server-url'] === 'string' ? { apiServer: args['api-server-url'] } : {}),
    ...(typeof args['api-server-ca'] === 'string' ? { apiServerCaFile: args['api-server-ca'] } : {}),
    certLifetimeMs: parseDuration(String(args['cert-lifetime'] ?? '24h'), { flag: '--cert-lifetime', min: 5 * MINUTE, max: 365 * DAY, code: 'ERR_ISSUER_CONFIG' }),
    nonceTtlMs: parseDuration(String(args['nonce-ttl'] ?? '60s'), { flag: '--nonce-ttl', min: 5000, max: 60 * MINUTE, code: 'ERR_ISSUER_CONFIG' }),
    groups: strings(args['group']),
    liqoCompat: args['liqo-compat'] === true,
    signer: args['signer'] === 'kubernetes' ? 'kubernetes' : 'embedded',
    ...(typeof args['kubeconfig'] === 'string' ? { kubeconfig: args['kubeconfig'] } : {}),
    ...(typeof args['context'] === 'string' ? { kubeContext: args['context'] } : {}),
    signerTimeoutMs: parseDuration(String(args['signer-timeout'] ?? '30s'), { flag: '--signer-timeout', min: 1000, max: 10 * MINUTE, code: 'ERR_ISSUER_CONFIG' }),
  };
}

async function serve(args: CommandArgs, ctx: CommandContext): Promise<number> {
  const { DATA_FILES, configError, openIssuer, parseListen, servingMaterial, startIssuerServer } = await loadIssuer();
  const providerClusterID = checkClusterId(required(args, 'cluster-id', 'serve'), '--cluster-id');
  const listen = parseListen(String(args['listen']));
  const settings = issuerSettings(args, providerClusterID);
  const log = (line: string) => ctx.io.stderr.write(`${new Date().toISOString()} issuer: ${line}\n`);
  const wildcard = listen.host === '0.0.0.0' || listen.host === '::';
  const sans = [...new Set([...(wildcard ? ['localhost', '127.0.0.1', '::1', hostname()] : [listen.host]), ...strings(args['san'])])];
  const opened = await openIssuer(settings, { env: ctx.env, now: () => new Date(), cwd: ctx.cwd, holder: 'issuer serve', log });
  let running: Awaited<ReturnType<typeof startIssuerServer>>;
  try {
    const tls = await servingMaterial(opened.data, sans, new Date());
    running = await startIssuerServer({ issuer: opened.issuer, tls, host: listen.host, port: listen.port, log });
  } catch (error) {
    await opened.close();
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE' || (error as NodeJS.ErrnoException).code === 'EACCES' || (error as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL') {
      throw configError(`cannot listen on ${String(args['listen'])}: ${(error as Error).message}`, '--listen');
    }
    throw error;
  }
  const tenants = args['reconcile-tenants'] === true ? await startReconciler(args, ctx, opened.issuer, log).catch(async (error: unknown) => {
    await running.close();
    await opened.close();
    throw error;
  }) : undefined;
  const shownHost = wildcard ? listen.host : listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const url = `https://${shownHost}:${running.port}`;
  log(
    `provider ${opened.providerClusterID} listening on ${url} (signer ${settings.signer}; trust ${join(opened.data.dir, DATA_FILES.servingCa)} for HTTPS; ` +
      `client CA ${join(opened.data.dir, DATA_FILES.clientCa)})`,
  );
  ctx.io.stdout.write(`${url}\n`);
  await new Promise<void>((resolveStop) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolveStop();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  log('stopping');
  await tenants?.stop();
  await running.close();
  await opened.close();
  return 0;
}

/** `--reconcile-tenants`: the declarative flow's reconciler over the Tenants of `--namespace`, sharing the issuer. */
async function startReconciler(args: CommandArgs, ctx: CommandContext, issuer: OpenIssuer['issuer'], log: (line: string) => void): Promise<{ stop(): Promise<void> }> {
  const { startTenantControllerFor } = await loadIssuer();
  const load = () =>
    loadKubeAccess({ kubeconfig: args['kubeconfig'] as string | undefined, context: args['context'] as string | undefined, flag: '--kubeconfig' }, { env: ctx.env, cwd: ctx.cwd });
  const access = await load();
  const namespace = (args['namespace'] as string | undefined) ?? access.namespace;
  if (namespace === undefined || namespace === '') {
    throw new CredentialsError('ERR_USAGE', 'issuer serve --reconcile-tenants needs --namespace (the kubeconfig context names none)', { path: '--namespace' });
  }
  const controller = startTenantControllerFor(access, { issuer, namespace, now: () => new Date(), log, load });
  log(`reconciling the Tenants of namespace ${namespace} on ${access.endpoint.server} (${access.source})`);
  return controller;
}

function readPublicKey(file: string, ctx: CommandContext): Promise<{ text: string; source: string }> {
  return readInput(file, ctx, (cause, path) =>
    new CredentialsError('ERR_ISSUER_CONFIG', `cannot read --public-key ${path}: ${(cause as Error).message}`, { path, cause }),
  );
}

export async function run(args: CommandArgs, ctx: CommandContext): Promise<number> {
  const action = String(args['action']);
  const dataDir = resolve(ctx.cwd, String(args['data-dir']));
  if (action === 'serve') return serve(args, ctx);
  const { TrustStore, checkGroups } = await loadIssuer();
  switch (action) {
    case 'trust': {
      const clusterID = checkClusterId(required(args, 'cluster-id', 'trust'), '--cluster-id');
      const { text, source } = await readPublicKey(required(args, 'public-key', 'trust'), ctx);
      const publicKey = parsePublicKey(text, source);
      const groups = checkGroups(strings(args['group']), '--group');
      const record = await new TrustStore(dataDir).trust(clusterID, publicKey, groups, new Date());
      ctx.io.stdout.write(`trusted ${record.clusterID} ${keyAlgorithm(publicKey)} ${fingerprint(spkiDer(publicKey))}${groups.length > 0 ? ` groups=${groups.join(',')}` : ''}\n`);
      return 0;
    }
    case 'untrust': {
      const clusterID = checkClusterId(required(args, 'cluster-id', 'untrust'), '--cluster-id');
      const removed = await new TrustStore(dataDir).untrust(clusterID);
      if (!removed) {
        throw new CredentialsError('ERR_ISSUER_NOT_TRUSTED', `${clusterID} is not trusted`, { path: '--cluster-id' });
      }
      ctx.io.stdout.write(`untrusted ${clusterID} (certificates already issued stay valid until they expire)\n`);
      return 0;
    }
    case 'list': {
      if (!existsSync(dataDir)) {
        throw new CredentialsError('ERR_ISSUER_CONFIG', `there is no issuer data dir ${dataDir}`, {
          path: '--data-dir',
          hint: `check --data-dir; clusterprofile issuer trust --data-dir ${dataDir} --cluster-id CONSUMER_ID --public-key FILE creates it`,
        });
      }
      const consumers = await new TrustStore(dataDir).list();
      for (const consumer of consumers) {
        ctx.io.stdout.write(
          `${consumer.clusterID}\t${keyAlgorithm(consumer.publicKey)}\t${fingerprint(spkiDer(consumer.publicKey))}\t${consumer.groups.join(',') || '-'}\t${consumer.addedAt}\n`,
        );
      }
      return 0;
    }
    default:
      throw new CredentialsError('ERR_USAGE', `unknown action ${action}`);
  }
}
