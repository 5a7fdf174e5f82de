/**
 * `clusterprofile fleet status|watch`: the inventory of one hub namespace through ClusterProfileFleet (the library's
 * fleet manager), without client-node. `status` lists the profiles, obtains each member's credential as the fleet
 * does (in-process for this package's plugins, from the same cache kubectl's plugin runs use; other plugins run as
 * processes) and prints one row per member; `watch` prints the fleet's events until stopped. With
 * `--lease-namespace` (a fleet sharded over hub replicas) `status` also reads the fleet's Leases there and shows the
 * replica that owns each member and the replica set.
 *
 * @example
 * ```sh
 * clusterprofile fleet status -n fleet --clusterprofile-provider-file providers.json
 * clusterprofile fleet status -n fleet -o yaml
 * clusterprofile fleet status -n fleet --lease-namespace hub-controller
 * clusterprofile fleet watch -n fleet --for 10m
 * ```
 */
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { stringify } from 'yaml';
import { loadAccessConfig } from '../../resolve/access-config.js';
import { ClusterProfileFleet } from '../../fleet/fleet.js';
import type { FleetEvent, FleetStatus } from '../../fleet/fleet-types.js';
import { readShardOwnership, ownerOf, type ShardOwnership } from '../../fleet/sharding/observe.js';
import { errorSummary } from '../../fleet/status.js';
import { KubeClient } from '../../kube/kube-client.js';
import { PROVIDER_FILE_OPTION, withProviderFileOption } from '../../resolve/provider-file-option.js';
import { parseDuration } from '../duration.js';
import type { CommandArgs, CommandContext } from '../command.js';

export function builder(parser: Argv): Argv<object> {
  return withProviderFileOption(parser)
    .positional('action', {
      choices: ['status', 'watch'] as const,
      describe: 'status: one row per member; watch: print events until stopped',
    })
    .option('namespace', {
      alias: 'n',
      type: 'string',
      requiresArg: true,
      demandOption: true,
      describe: 'The inventory: the hub namespace of the ClusterProfiles',
    })
    .option('kubeconfig', {
      type: 'string',
      requiresArg: true,
      describe: "The hub's kubeconfig (default: KUBECONFIG, else ~/.kube/config, else in-cluster)",
    })
    .option('context', {
      type: 'string',
      requiresArg: true,
      describe: 'A context of the hub kubeconfig instead of its current one',
    })
    .option('output', {
      alias: 'o',
      choices: ['table', 'json', 'yaml'] as const,
      default: 'table',
      describe: 'status: table (like kubectl get), json or yaml; watch: table or json (one object per line)',
    })
    .option('fetch-timeout', {
      type: 'string',
      requiresArg: true,
      default: '30s',
      describe: 'Deadline of one credential fetch (a plugin process is killed at it)',
    })
    .option('for', {
      type: 'string',
      requiresArg: true,
      describe: 'watch: stop after DURATION (default: until interrupted)',
    })
    .option('lease-namespace', {
      type: 'string',
      requiresArg: true,
      describe:
        'status: the Leases of a fleet sharded over hub replicas: add the owner of each member and the replicas',
    })
    .option('require-healthy', {
      type: 'boolean',
      default: false,
      describe: 'Count a member ready only while its ControlPlaneHealthy condition is True',
    })
    .example('$0 fleet status -n fleet', 'every member: provider, state, credential expiry, last error')
    .example('$0 fleet status -n fleet --lease-namespace hub-controller', 'which hub replica owns each member')
    .example('$0 fleet watch -n fleet -o json', 'events as JSON lines');
}

export async function run(args: CommandArgs, ctx: CommandContext): Promise<number> {
  const fetchTimeoutMs = parseDuration(String(args['fetch-timeout']), {
    flag: '--fetch-timeout',
    min: 100,
    max: 600_000,
    code: 'ERR_USAGE',
  });
  const stopAfterMs =
    typeof args['for'] === 'string'
      ? parseDuration(args['for'], { flag: '--for', min: 100, max: 31 * 86_400_000, code: 'ERR_USAGE' })
      : undefined;
  const accessConfig = await loadAccessConfig(resolve(ctx.cwd, String(args[PROVIDER_FILE_OPTION])));
  const output = String(args.output);
  const fleet = new ClusterProfileFleet({
    namespace: String(args.namespace),
    accessConfig,
    hub: {
      ...(typeof args.kubeconfig === 'string' ? { kubeconfig: args.kubeconfig } : {}),
      ...(typeof args.context === 'string' ? { context: args.context } : {}),
    },
    clients: false,
    requireHealthy: args['require-healthy'] === true,
    fetchTimeoutMs,
    env: ctx.env,
    cwd: ctx.cwd,
    warn: (message) => ctx.io.stderr.write(`warning: ${message}\n`),
  });
  try {
    if (args.action === 'watch') return await watch(fleet, ctx, output, stopAfterMs);
    await fleet.start();
    await fleet.settled();
    const status = fleet.status();
    const owners =
      typeof args['lease-namespace'] === 'string' ? await readOwners(args, ctx, args['lease-namespace']) : undefined;
    const document = owners === undefined ? status : withOwners(status, owners);
    if (output === 'json') ctx.io.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
    else if (output === 'yaml') ctx.io.stdout.write(stringify(document));
    else ctx.io.stdout.write(statusTable(status, Date.now(), owners));
    return 0;
  } finally {
    await fleet.close();
  }
}

/** The sharded fleet's Leases in `leaseNamespace`, read as the hub identity. */
async function readOwners(args: CommandArgs, ctx: CommandContext, leaseNamespace: string): Promise<ShardOwnership> {
  const kube = await KubeClient.load(
    {
      ...(typeof args.kubeconfig === 'string' ? { kubeconfig: args.kubeconfig, flag: '--kubeconfig' } : {}),
      ...(typeof args.context === 'string' ? { context: args.context } : {}),
      what: "the hub's kubeconfig",
      allowExec: true,
    },
    { env: ctx.env, cwd: ctx.cwd },
    { exec: { env: ctx.env } },
  );
  try {
    return await readShardOwnership(kube.send, { leaseNamespace, fleet: String(args.namespace) });
  } finally {
    await kube.close();
  }
}

/** The status with each member's owner and the replica set (`-o json|yaml`). */
function withOwners(status: FleetStatus, owners: ShardOwnership): Record<string, unknown> {
  return {
    ...status,
    clusters: status.clusters.map((row) => ({ ...row, owner: ownerOf(owners, row.memberKey ?? row.name) ?? null })),
    leases: owners,
  };
}

async function watch(
  fleet: ClusterProfileFleet,
  ctx: CommandContext,
  output: string,
  stopAfterMs: number | undefined,
): Promise<number> {
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const timer = stopAfterMs === undefined ? undefined : setTimeout(onSignal, stopAfterMs);
  // Subscribed before start: the first list's events are printed too.
  const events = fleet.events({ signal: stop.signal });
  try {
    await fleet.start();
    if (output === 'table') ctx.io.stdout.write(`${pad(['TIME', 'EVENT', 'NAME', 'DETAIL'], WATCH_WIDTHS)}\n`);
    for await (const event of events) {
      ctx.io.stdout.write(output === 'json' ? `${JSON.stringify(eventRecord(event))}\n` : `${eventLine(event)}\n`);
    }
    return 0;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** An event as plain data (no clients, no live member objects). */
function eventRecord(event: FleetEvent): Record<string, unknown> {
  const record: Record<string, unknown> = { time: new Date().toISOString(), type: event.type };
  if ('name' in event) record['name'] = event.name;
  switch (event.type) {
    case 'added':
    case 'updated':
      record['provider'] = event.member.providerName;
      record['mode'] = event.member.mode;
      if (event.member.credentialExpiresAt !== undefined)
        record['credentialExpiresAt'] = new Date(event.member.credentialExpiresAt).toISOString();
      break;
    case 'removed':
      record['reason'] = event.reason;
      break;
    case 'unhealthy':
      record['condition'] = event.condition ?? null;
      break;
    case 'credentialError':
      record['error'] = errorSummary(event.error);
      record['failures'] = event.failures;
      if (event.retryAt !== undefined) record['retryAt'] = new Date(event.retryAt).toISOString();
      break;
    case 'invalid':
      record['error'] = errorSummary(event.error);
      break;
    case 'hubError':
      record['error'] = errorSummary(event.error);
      record['failures'] = event.failures;
      break;
  }
  return record;
}

function eventLine(event: FleetEvent): string {
  const record = eventRecord(event);
  const error = record['error'] as { code: string; message: string } | undefined;
  let detail = '';
  if (error !== undefined) detail = oneLine(`${error.code}: ${error.message}`, 120);
  else if (event.type === 'removed') detail = event.reason;
  else if (event.type === 'unhealthy')
    detail =
      event.condition === undefined
        ? 'no ControlPlaneHealthy condition'
        : `ControlPlaneHealthy=${event.condition.status}${event.condition.reason === undefined ? '' : ` (${event.condition.reason})`}`;
  else if (event.type === 'added' || event.type === 'updated')
    detail = `${String(record['provider'])} ${String(record['mode'])}`;
  return pad([String(record['time']), event.type, 'name' in event ? event.name : '-', detail], WATCH_WIDTHS);
}

/**
 * The watch's columns, fixed before the first event (as `kubectl get -w` keeps the widths of its first page): an
 * ISO-8601 time with milliseconds, the longest event type, a name of up to 40 characters (a longer one pushes the
 * rest of its line right, never into the next column).
 */
const WATCH_WIDTHS = ['2026-01-01T00:00:00.000Z'.length, 'credentialError'.length, 40];

/**
 * `kubectl get`-style columns: NAME PROVIDER STATE EXPIRES LAST ERROR; with `owners` (a sharded fleet's Leases) an
 * OWNER column before LAST ERROR and the replica set after the table.
 */
export function statusTable(status: FleetStatus, now: number, owners?: ShardOwnership): string {
  const header = ['NAME', 'PROVIDER', 'STATE', 'EXPIRES', ...(owners === undefined ? [] : ['OWNER']), 'LAST ERROR'];
  const rows = [header];
  for (const row of status.clusters) {
    const expires =
      row.credentialExpiresAt === undefined ? '<none>' : humanDuration(Date.parse(row.credentialExpiresAt) - now);
    const error =
      row.lastError === undefined ? '<none>' : oneLine(`${row.lastError.code}: ${row.lastError.message}`, 100);
    const owner = owners === undefined ? [] : [ownerOf(owners, row.memberKey ?? row.name) ?? '<none>'];
    rows.push([row.name, row.provider ?? '<none>', row.state, expires, ...owner, error]);
  }
  const widths = header.slice(0, -1).map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const table = `${rows.map((row) => pad(row, widths)).join('\n')}\n`;
  if (owners === undefined) return table;
  const replicas =
    owners.replicas.length === 0
      ? '<none>'
      : owners.replicas.map((replica) => `${replica.identity} (${replica.shards} shards)`).join(', ');
  const free = owners.holders.filter((holder) => holder === null).length;
  return `${table}\nreplicas in ${owners.leaseNamespace}: ${replicas}; ${owners.shards ?? 'unknown'} shards, ${free} free\n`;
}

/** kubectl's column gap (its tabwriter's padding). */
const GAP = 3;

/** One row: each cell but the last padded to its column's width, then the gap, so cells never run together. */
function pad(cells: string[], widths: number[]): string {
  return cells
    .map((cell, index) => (index < widths.length ? `${cell.padEnd(widths[index]!)}${' '.repeat(GAP)}` : cell))
    .join('')
    .trimEnd();
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** kubectl's HumanDuration (for expiry): `45s`, `7m59s`, `59m`, `5h3m`, `2d3h`; `expired` when past. */
function humanDuration(ms: number): string {
  if (ms <= 0) return 'expired';
  const seconds = Math.floor(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  if (seconds < 120) return `${seconds}s`;
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (days < 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  return `${days}d`;
}
