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
import { createHash, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { CredentialsError } from '../../base/errors.js';
import type { BackgroundLoops, IssuerSettings, OpenIssuer } from '../../issuer/index.js';
import { checkClusterId, keyAlgorithm, parsePublicKey, spkiDer } from '../../providers/tenant-cert/index.js';
import { parseDuration } from '../duration.js';
import { readInput } from '../input.js';
import { actionsUsage, requiredFlag, type ActionSpec, type CommandArgs, type CommandContext } from '../command.js';

export const actions = {
  serve: {
    usage: '$0 issuer serve --data-dir DIR --listen HOST:PORT --cluster-id PROVIDER_ID [options]',
    describe:
      'Serve the issuer over HTTPS: nonces, and Tenants of trusted consumers answered with Identities. Replicas: --state kubernetes [--namespace NS] instead of --data-dir; the declarative flow: --reconcile-tenants.',
    flags: [
      'data-dir',
      'state',
      'namespace',
      'tls-cert-file',
      'tls-key-file',
      'tls-reload-interval',
      'cluster-id',
      'listen',
      'san',
      'api-server-url',
      'api-server-ca',
      'cert-lifetime',
      'nonce-ttl',
      'nonce-collection-interval',
      'signer',
      'kubeconfig',
      'context',
      'signer-timeout',
      'group',
      'liqo-compat',
      'reconcile-tenants',
      'metrics-listen',
      'log-format',
      'shutdown-grace',
    ],
  },
  trust: {
    usage: '$0 issuer trust --data-dir DIR --cluster-id CONSUMER_ID --public-key FILE [--group G]...',
    describe:
      "Trust a consumer cluster's public key (creates the data dir if needed; --state kubernetes [--namespace NS]: a trust record ConfigMap).",
    flags: ['data-dir', 'state', 'namespace', 'kubeconfig', 'context', 'cluster-id', 'public-key', 'group'],
  },
  untrust: {
    usage: '$0 issuer untrust --data-dir DIR --cluster-id CONSUMER_ID',
    describe: 'Stop trusting a consumer cluster (certificates already issued stay valid until they expire).',
    flags: ['data-dir', 'state', 'namespace', 'kubeconfig', 'context', 'cluster-id'],
  },
  list: {
    usage: '$0 issuer list --data-dir DIR',
    describe: 'List the trusted consumers: cluster ID, key algorithm, fingerprint, groups, since.',
    flags: ['data-dir', 'state', 'namespace', 'kubeconfig', 'context'],
  },
} as const satisfies Record<string, ActionSpec>;
const MINUTE = 60_000;
const DAY = 1440 * MINUTE;

/**
 * The issuer (src/issuer/: data dir or Kubernetes state, HTTPS server, trust store, groups policy), loaded only by
 * the commands that run it (`issuer`, `tenant nonce|accept`): a chunk of its own in the CLI bundle, so `keygen` and
 * the consumer's commands never read it.
 */
export const loadIssuer = (): Promise<typeof import('../../issuer/index.js')> => import('../../issuer/index.js');

export function builder(parser: Argv): Argv<object> {
  return parser
    .usage(
      actionsUsage(
        actions,
        'The tenant-cert issuer: hands out nonces and signs short-lived client certificates for trusted consumer clusters.',
      ),
    )
    .positional('action', { type: 'string', choices: Object.keys(actions), describe: 'what to do' })
    .option('data-dir', {
      type: 'string',
      requiresArg: true,
      describe: 'the issuer state (0700; created on first serve); needed unless --state kubernetes',
    })
    .option('state', {
      type: 'string',
      choices: ['data-dir', 'kubernetes'],
      default: 'data-dir',
      describe:
        'serve: where the state lives: --data-dir, or ConfigMaps/Secrets of the provider cluster (replicas share it)',
    })
    .option('namespace', {
      type: 'string',
      requiresArg: true,
      describe:
        "--state kubernetes, --reconcile-tenants: the namespace of the state and of the Tenants (default: the context's, or the pod's)",
    })
    .option('tls-cert-file', {
      type: 'string',
      requiresArg: true,
      describe:
        "serve: HTTPS certificate PEM (chain), e.g. a kubernetes.io/tls Secret's tls.crt, instead of one from the state's serving CA; with --tls-key-file",
    })
    .option('tls-key-file', {
      type: 'string',
      requiresArg: true,
      describe: 'serve: the private key of --tls-cert-file (PEM)',
    })
    .option('tls-reload-interval', {
      type: 'string',
      default: '5s',
      requiresArg: true,
      describe:
        'serve: how often --tls-cert-file/--tls-key-file are read again; a renewed pair is served without a restart (1s..10m)',
    })
    .option('cluster-id', {
      type: 'string',
      requiresArg: true,
      describe: "serve: this provider cluster's ID; trust/untrust: the consumer's",
    })
    .option('listen', {
      type: 'string',
      default: '127.0.0.1:8443',
      requiresArg: true,
      describe: 'serve: HOST:PORT (port 0: any free port)',
    })
    .option('san', {
      type: 'string',
      array: true,
      requiresArg: true,
      describe: 'serve: extra DNS names / IPs for the HTTPS certificate',
    })
    .option('api-server-url', { type: 'string', requiresArg: true, describe: 'the API server URL put in Identities' })
    .option('api-server-ca', {
      type: 'string',
      requiresArg: true,
      describe: "PEM file of the API server's CA, put in Identities",
    })
    .option('cert-lifetime', {
      type: 'string',
      default: '24h',
      requiresArg: true,
      describe: 'lifetime of issued certificates (5m..365d)',
    })
    .option('nonce-ttl', {
      type: 'string',
      default: '60s',
      requiresArg: true,
      describe: 'how long a nonce may wait for its Tenant (5s..1h)',
    })
    .option('nonce-collection-interval', {
      type: 'string',
      default: '30s',
      requiresArg: true,
      describe: '--state kubernetes: how often spent nonce records are collected, ±50 % (1s..1h)',
    })
    .option('signer', {
      type: 'string',
      choices: ['embedded', 'kubernetes'],
      default: 'embedded',
      describe: "who signs: the data dir's client CA, or the Kubernetes CSR API",
    })
    .option('kubeconfig', {
      type: 'string',
      requiresArg: true,
      describe:
        '--signer/--state kubernetes, --reconcile-tenants: kubeconfig (default: KUBECONFIG, else ~/.kube/config, else in-cluster)',
    })
    .option('context', {
      type: 'string',
      requiresArg: true,
      describe: '--signer/--state kubernetes, --reconcile-tenants: kubeconfig context',
    })
    .option('signer-timeout', {
      type: 'string',
      default: '30s',
      requiresArg: true,
      describe: '--signer kubernetes: wait this long for the certificate',
    })
    .option('group', {
      type: 'string',
      array: true,
      requiresArg: true,
      describe:
        'serve: a group (O) every consumer gets, {clusterID} is replaced; trust: a group for this consumer only. Never system:*',
    })
    .option('liqo-compat', {
      type: 'boolean',
      default: false,
      describe: 'serve: also accept Liqo Tenants (signature over the nonce alone: weaker)',
    })
    .option('reconcile-tenants', {
      type: 'boolean',
      default: false,
      describe:
        'serve: also answer the Tenant resources of --namespace on the cluster of --kubeconfig/--context (the declarative flow)',
    })
    .option('metrics-listen', {
      type: 'string',
      requiresArg: true,
      describe:
        'serve: also serve GET /metrics over plain HTTP on HOST:PORT (Prometheus inside a cluster); /metrics is on the HTTPS listener too',
    })
    .option('log-format', {
      type: 'string',
      choices: ['text', 'json'],
      default: 'text',
      describe: 'serve: text lines, or one JSON object per line (time, level, msg, code, consumer, durationMs)',
    })
    .option('shutdown-grace', {
      type: 'string',
      default: '20s',
      requiresArg: true,
      describe: 'serve: on SIGTERM/SIGINT, how long requests in flight may take to finish (1s..10m)',
    })
    .option('public-key', {
      type: 'string',
      requiresArg: true,
      describe: 'trust: the consumer\'s public key, PEM SPKI ("-": stdin)',
    });
}

const required = (args: CommandArgs, flag: string, action: string): string =>
  requiredFlag(args, flag, `issuer ${action}`);

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : typeof value === 'string' ? [value] : [];
}

/** SHA256:<base64> of the SPKI DER, as `ssh-keygen -l` prints fingerprints. */
export function fingerprint(der: Buffer): string {
  return `SHA256:${createHash('sha256').update(der).digest('base64').replace(/=+$/, '')}`;
}

/** The state flags fit together: --data-dir for data-dir only (and required there), --namespace for kubernetes only, the TLS files as a pair. */
function checkStateFlags(args: CommandArgs, action: string): 'data-dir' | 'kubernetes' {
  const state = args['state'] === 'kubernetes' ? 'kubernetes' : 'data-dir';
  const usage = (message: string, flag: string) => new CredentialsError('ERR_USAGE', message, { path: flag });
  if (state === 'data-dir') {
    required(args, 'data-dir', action);
    if (args['namespace'] !== undefined && args['reconcile-tenants'] !== true) {
      throw usage('--namespace goes with --state kubernetes or --reconcile-tenants', '--namespace');
    }
  } else if (args['data-dir'] !== undefined) {
    throw usage(
      '--data-dir goes with --state data-dir; --state kubernetes keeps everything in the API server',
      '--data-dir',
    );
  }
  if ((args['tls-cert-file'] === undefined) !== (args['tls-key-file'] === undefined)) {
    throw usage(
      '--tls-cert-file and --tls-key-file go together',
      args['tls-cert-file'] === undefined ? '--tls-cert-file' : '--tls-key-file',
    );
  }
  return state;
}

export function issuerSettings(args: CommandArgs, providerClusterID: string | undefined): IssuerSettings {
  const state = args['state'] === 'kubernetes' ? 'kubernetes' : 'data-dir';
  return {
    state,
    ...(typeof args['data-dir'] === 'string' ? { dataDir: args['data-dir'] } : {}),
    ...(typeof args['namespace'] === 'string' ? { namespace: args['namespace'] } : {}),
    ...(typeof args['tls-cert-file'] === 'string' ? { tlsCertFile: args['tls-cert-file'] } : {}),
    ...(typeof args['tls-key-file'] === 'string' ? { tlsKeyFile: args['tls-key-file'] } : {}),
    ...(providerClusterID === undefined ? {} : { providerClusterID }),
    ...(typeof args['api-server-url'] === 'string' ? { apiServer: args['api-server-url'] } : {}),
    ...(typeof args['api-server-ca'] === 'string' ? { apiServerCaFile: args['api-server-ca'] } : {}),
    certLifetimeMs: parseDuration(String(args['cert-lifetime'] ?? '24h'), {
      flag: '--cert-lifetime',
      min: 5 * MINUTE,
      max: 365 * DAY,
      code: 'ERR_ISSUER_CONFIG',
    }),
    nonceTtlMs: parseDuration(String(args['nonce-ttl'] ?? '60s'), {
      flag: '--nonce-ttl',
      min: 5000,
      max: 60 * MINUTE,
      code: 'ERR_ISSUER_CONFIG',
    }),
    nonceCollectionMs: parseDuration(String(args['nonce-collection-interval'] ?? '30s'), {
      flag: '--nonce-collection-interval',
      min: 1000,
      max: 60 * MINUTE,
      code: 'ERR_ISSUER_CONFIG',
    }),
    groups: strings(args['group']),
    liqoCompat: args['liqo-compat'] === true,
    signer: args['signer'] === 'kubernetes' ? 'kubernetes' : 'embedded',
    ...(typeof args['kubeconfig'] === 'string' ? { kubeconfig: args['kubeconfig'] } : {}),
    ...(typeof args['context'] === 'string' ? { kubeContext: args['context'] } : {}),
    signerTimeoutMs: parseDuration(String(args['signer-timeout'] ?? '30s'), {
      flag: '--signer-timeout',
      min: 1000,
      max: 10 * MINUTE,
      code: 'ERR_ISSUER_CONFIG',
    }),
  };
}

/** One JSON object per line: `time`, `level`, `msg`, then the fields given (never a secret: callers pass none). */
function jsonLine(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`;
}

async function serve(args: CommandArgs, ctx: CommandContext): Promise<number> {
  const {
    BackgroundLoops,
    IssuerMetrics,
    configError,
    openIssuer,
    parseListen,
    startIssuerServer,
    startMetricsServer,
  } = await loadIssuer();
  checkStateFlags(args, 'serve');
  const providerClusterID = checkClusterId(required(args, 'cluster-id', 'serve'), '--cluster-id');
  const listen = parseListen(String(args['listen']));
  const metricsListen =
    typeof args['metrics-listen'] === 'string' ? parseListen(args['metrics-listen'], '--metrics-listen') : undefined;
  const graceMs = parseDuration(String(args['shutdown-grace'] ?? '20s'), {
    flag: '--shutdown-grace',
    min: 1000,
    max: 10 * MINUTE,
    code: 'ERR_ISSUER_CONFIG',
  });
  const reloadMs = parseDuration(String(args['tls-reload-interval'] ?? '5s'), {
    flag: '--tls-reload-interval',
    min: 1000,
    max: 10 * MINUTE,
    code: 'ERR_ISSUER_CONFIG',
  });
  const settings = issuerSettings(args, providerClusterID);
  const json = args['log-format'] === 'json';
  const log = json
    ? (line: string) =>
        ctx.io.stderr.write(
          jsonLine(
            line.startsWith('internal error') ||
              line.startsWith('readiness check') ||
              /^background \S+ failed/.test(line)
              ? 'error'
              : line.startsWith('serving certificate refused')
                ? 'warn'
                : 'info',
            line,
          ),
        )
    : (line: string) => ctx.io.stderr.write(`${new Date().toISOString()} issuer: ${line}\n`);
  const wildcard = listen.host === '0.0.0.0' || listen.host === '::';
  const sans = [
    ...new Set([
      ...(wildcard ? ['localhost', '127.0.0.1', '::1', hostname()] : [listen.host]),
      ...strings(args['san']),
    ]),
  ];
  // One logger in either format. JSON: one line per handshake request from the server (code, consumer, duration)
  // instead of the issuer's own text lines; every other line (the state, background loops) the same in both.
  let state: OpenIssuer['state'] | undefined;
  const metrics = new IssuerMetrics({ noncesOutstanding: () => state?.outstandingNonces(new Date()) ?? 0 });
  const background = new BackgroundLoops({ log, counted: (loop) => metrics.backgroundFailure(loop), now: Date.now });
  const opened = await openIssuer(settings, {
    env: ctx.env,
    now: () => new Date(),
    cwd: ctx.cwd,
    holder: 'issuer serve',
    log,
    logHandshakes: !json,
    background,
  });
  state = opened.state;
  let running: Awaited<ReturnType<typeof startIssuerServer>>;
  let metricsServer: Awaited<ReturnType<typeof startMetricsServer>> | undefined;
  try {
    // The state serves the --tls-cert-file pair when it is given, else a certificate from its serving CA.
    const tls = await opened.state.servingMaterial(sans, new Date());
    running = await startIssuerServer({
      issuer: opened.issuer,
      tls,
      host: listen.host,
      port: listen.port,
      log,
      metrics,
      background,
      readinessChecks: [{ name: opened.state.kind, check: (signal) => opened.state.checkReady(signal) }],
      ...(settings.tlsCertFile !== undefined && settings.tlsKeyFile !== undefined
        ? {
            servingFiles: {
              certFile: settings.tlsCertFile,
              keyFile: settings.tlsKeyFile,
              cwd: ctx.cwd,
              intervalMs: reloadMs,
            },
          }
        : {}),
      ...(json
        ? {
            logHandshake: (entry) => {
              const { step, status, code, consumer, durationMs, detail, validUntil } = entry;
              const level = code === undefined ? 'info' : status < 500 ? 'warn' : 'error';
              const what = step === 'nonce' ? 'nonce' : 'tenant';
              const msg =
                code === undefined
                  ? step === 'nonce'
                    ? 'nonce issued'
                    : 'certificate issued'
                  : `${what} refused: ${detail ?? code}`;
              ctx.io.stderr.write(
                jsonLine(level, msg, {
                  step,
                  status,
                  code: code ?? null,
                  consumer: consumer ?? null,
                  durationMs,
                  ...(validUntil === undefined ? {} : { validUntil }),
                }),
              );
            },
          }
        : {}),
    });
    if (metricsListen !== undefined) {
      metricsServer = await startMetricsServer(metrics, metricsListen.host, metricsListen.port).catch(
        (error: unknown) => {
          void running.close(0);
          throw Object.assign(error as Error, { flag: '--metrics-listen' });
        },
      );
    }
  } catch (error) {
    await opened.close();
    if (
      (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ||
      (error as NodeJS.ErrnoException).code === 'EACCES' ||
      (error as NodeJS.ErrnoException).code === 'EADDRNOTAVAIL'
    ) {
      const flag = (error as { flag?: string }).flag ?? '--listen';
      throw configError(`cannot listen on ${String(args[flag.slice(2)])}: ${(error as Error).message}`, flag);
    }
    throw error;
  }
  const tenants =
    args['reconcile-tenants'] === true
      ? await startReconciler(args, ctx, opened.issuer, log, background).catch(async (error: unknown) => {
          await running.close(0);
          await metricsServer?.close();
          await opened.close();
          throw error;
        })
      : undefined;
  const shownHost = wildcard ? listen.host : listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const url = `https://${shownHost}:${running.port}`;
  log(
    `provider ${opened.providerClusterID} listening on ${url} (signer ${settings.signer}; ` +
      `${opened.state.describe()})` +
      `${metricsServer === undefined ? '' : `; metrics on ${metricsServer.url}/metrics`}`,
  );
  ctx.io.stdout.write(`${url}\n`);
  const signal = await new Promise<NodeJS.Signals>((resolveStop) => {
    const stop = (received: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolveStop(received);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  log(`stopping (${signal}): no new connections; requests in flight get up to ${graceMs / 1000}s`);
  await tenants?.stop();
  const closed = await running.close(graceMs);
  await metricsServer?.close();
  await opened.close();
  log(
    `stopped: ${closed.inFlight - closed.cut} of ${closed.inFlight} requests in flight answered${closed.cut > 0 ? `, ${closed.cut} cut at the end of --shutdown-grace` : ''}; data dir released`,
  );
  return 0;
}

/** `--reconcile-tenants`: the declarative flow's reconciler over the Tenants of `--namespace`, sharing the issuer. */
async function startReconciler(
  args: CommandArgs,
  ctx: CommandContext,
  issuer: OpenIssuer['issuer'],
  log: (line: string) => void,
  background: BackgroundLoops,
): Promise<{ stop(): Promise<void> }> {
  const [{ startTenantControllerFor }, { KubeClient }, { KUBE_RETRY }] = await Promise.all([
    loadIssuer(),
    import('../../kube/kube-client.js'),
    import('../../kube/transport.js'),
  ]);
  const client = await KubeClient.load(
    {
      kubeconfig: args['kubeconfig'] as string | undefined,
      context: args['context'] as string | undefined,
      flag: '--kubeconfig',
    },
    { env: ctx.env, cwd: ctx.cwd },
    { timeoutMs: 30_000, retry: KUBE_RETRY },
  );
  const { access } = client;
  const namespace = (args['namespace'] as string | undefined) ?? access.namespace;
  if (namespace === undefined || namespace === '') {
    await client.close();
    throw new CredentialsError(
      'ERR_USAGE',
      'issuer serve --reconcile-tenants needs --namespace (the kubeconfig context names none)',
      { path: '--namespace' },
    );
  }
  // Its lists and watches are retried a second after a failure: the allowance is the minimum, a minute.
  const report = background.register('tenant-reconciler', 1000);
  const controller = startTenantControllerFor(client, { issuer, namespace, now: () => new Date(), log, report });
  log(`reconciling the Tenants of namespace ${namespace} on ${access.endpoint.server} (${access.source})`);
  return controller;
}

function readPublicKey(file: string, ctx: CommandContext): Promise<{ text: string; source: string }> {
  return readInput(
    file,
    ctx,
    (cause, path) =>
      new CredentialsError('ERR_ISSUER_CONFIG', `cannot read --public-key ${path}: ${(cause as Error).message}`, {
        path,
        cause,
      }),
  );
}

export async function run(args: CommandArgs, ctx: CommandContext): Promise<number> {
  const action = String(args['action']);
  if (action === 'serve') return serve(args, ctx);
  const { TrustStore, checkGroups, openKubernetesTrust } = await loadIssuer();
  const state = checkStateFlags(args, action);
  if (state === 'kubernetes') {
    const opened = await openKubernetesTrust(issuerSettings(args, undefined), { env: ctx.env, cwd: ctx.cwd });
    try {
      return await manageTrust(action, args, ctx, opened.store, checkGroups);
    } finally {
      await opened.close();
    }
  }
  const dataDir = resolve(ctx.cwd, String(args['data-dir']));
  if (action === 'list' && !existsSync(dataDir)) {
    throw new CredentialsError('ERR_ISSUER_CONFIG', `there is no issuer data dir ${dataDir}`, {
      path: '--data-dir',
      hint: `check --data-dir; clusterprofile issuer trust --data-dir ${dataDir} --cluster-id CONSUMER_ID --public-key FILE creates it`,
    });
  }
  return manageTrust(action, args, ctx, new TrustStore(dataDir), checkGroups);
}

/** What `issuer trust|untrust|list` need of a trust store (the data dir's or the Kubernetes state's). */
interface ManagedTrust {
  trust(clusterID: string, publicKey: KeyObject, groups: readonly string[], now: Date): Promise<{ clusterID: string }>;
  untrust(clusterID: string): Promise<boolean>;
  list(): Promise<Array<{ clusterID: string; publicKey: KeyObject; groups: string[]; addedAt: string }>>;
}

async function manageTrust(
  action: string,
  args: CommandArgs,
  ctx: CommandContext,
  store: ManagedTrust,
  checkGroups: (groups: readonly string[], flag: string) => string[],
): Promise<number> {
  switch (action) {
    case 'trust': {
      const clusterID = checkClusterId(required(args, 'cluster-id', 'trust'), '--cluster-id');
      const { text, source } = await readPublicKey(required(args, 'public-key', 'trust'), ctx);
      const publicKey = parsePublicKey(text, source);
      const groups = checkGroups(strings(args['group']), '--group');
      const record = await store.trust(clusterID, publicKey, groups, new Date());
      ctx.io.stdout.write(
        `trusted ${record.clusterID} ${keyAlgorithm(publicKey)} ${fingerprint(spkiDer(publicKey))}${groups.length > 0 ? ` groups=${groups.join(',')}` : ''}\n`,
      );
      return 0;
    }
    case 'untrust': {
      const clusterID = checkClusterId(required(args, 'cluster-id', 'untrust'), '--cluster-id');
      const removed = await store.untrust(clusterID);
      if (!removed) {
        throw new CredentialsError('ERR_ISSUER_NOT_TRUSTED', `${clusterID} is not trusted`, { path: '--cluster-id' });
      }
      ctx.io.stdout.write(`untrusted ${clusterID} (certificates already issued stay valid until they expire)\n`);
      return 0;
    }
    case 'list': {
      const consumers = await store.list();
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
