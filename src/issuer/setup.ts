/**
 * The composition of an issuer from command-line settings, shared by `clusterprofile issuer serve` and the manual
 * flow (`clusterprofile tenant nonce|accept`): data dir, lock, nonce journal, trust store, signer, policy.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseDocument } from '../base/document.js';
import { CredentialsError } from '../base/errors.js';
import { decodeCertificatesPem } from '../base/pem-file.js';
import type { Env } from '../base/io.js';
import { openDataDir } from './state/data-dir/data-dir.js';
import { embeddedSigner } from './signer/embedded-signer.js';
import {
  ensurePrivateDir,
  lockDataDir,
  readOptional,
  writeFileAtomic,
  type DataDirLock,
} from './state/data-dir/files.js';
import { Issuer } from './issuer.js';
import { NonceStore } from './state/data-dir/nonce-journal.js';
import { checkGroups } from './policy.js';
import { servingMaterialFromFiles } from './serving-files.js';
import type { BackgroundLoops } from './background.js';
import type { IssuerSettings } from './settings.js';
import type { Signer } from './signer/signer.js';
import { dataDirState } from './state/data-dir/data-dir-state.js';
import type { IssuerState } from './state/issuer-state.js';

export type { IssuerSettings };
import { TrustStore } from './state/data-dir/trust-files.js';
import { checkClusterId, isClusterId } from '../wire/tenant-cert/cluster-id.js';

export function configError(message: string, path: string, hint?: string): CredentialsError {
  return new CredentialsError('ERR_ISSUER_CONFIG', message, { path, ...(hint === undefined ? {} : { hint }) });
}

/** HOST:PORT, [IPv6]:PORT. */
export function parseListen(text: string, flag = '--listen'): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (match === null || !(port >= 0 && port <= 65535)) {
    throw configError(`${flag} ${JSON.stringify(text)} is not HOST:PORT`, flag);
  }
  return { host: match[1] ?? (match[2] === '' ? '0.0.0.0' : (match[2] ?? '0.0.0.0')), port };
}

export interface OpenIssuer {
  issuer: Issuer;
  state: IssuerState;
  providerClusterID: string;
  close(): Promise<void>;
}

export interface IssuerDeps {
  env: Env;
  now(): Date;
  cwd: string;
  holder: string;
  /** Operational lines (the state, background loops) — and, unless {@link logHandshakes} is false, one per handshake. */
  log?(line: string): void;
  /** Whether the issuer writes its own line per handshake to {@link log} (default true; `issuer serve --log-format json` logs handshakes itself). */
  logHandshakes?: boolean;
  /** Where background loops report (logged, counted, readiness): ./background.ts. */
  background?: BackgroundLoops;
}

interface IssuerRecord {
  providerClusterID: string;
}

function parseRecord(text: string, file: string): IssuerRecord {
  const hint = 'restore it from a backup, or write {"providerClusterID": "<the provider cluster ID>"}';
  const record = parseDocument(text, {
    source: file,
    code: 'ERR_ISSUER_DATA_DIR',
    format: 'json',
    message: `${file} does not name a provider cluster ID`,
    hint,
  });
  const id = (record as { providerClusterID?: unknown } | null | undefined)?.providerClusterID;
  if (!isClusterId(id)) {
    throw new CredentialsError('ERR_ISSUER_DATA_DIR', `${file} does not name a provider cluster ID`, {
      path: file,
      hint: 'restore it from a backup, or write {"providerClusterID": "<the provider cluster ID>"}',
    });
  }
  return { providerClusterID: id };
}

/** The provider the data dir belongs to (DATA_DIR/issuer.json), checked against --cluster-id. */
function recordedProvider(recorded: string | undefined, settings: IssuerSettings, dataDir: string): string {
  if (recorded !== undefined) {
    const record = parseRecord(recorded, join(dataDir, 'issuer.json'));
    if (settings.providerClusterID !== undefined && settings.providerClusterID !== record.providerClusterID) {
      throw configError(
        `the data dir ${dataDir} belongs to provider ${record.providerClusterID}, not ${settings.providerClusterID}`,
        '--cluster-id',
        'use another --data-dir for another provider cluster',
      );
    }
    return record.providerClusterID;
  }
  if (settings.providerClusterID === undefined) {
    throw configError(
      `the data dir ${dataDir} has no issuer yet`,
      '--data-dir',
      'run clusterprofile issuer serve --cluster-id PROVIDER_ID first, or pass --provider-cluster-id',
    );
  }
  return checkClusterId(settings.providerClusterID, '--cluster-id');
}

/**
 * Opens the data dir (creating it), locks it, replays the nonce journal and builds the issuer. The provider ID is
 * recorded in DATA_DIR/issuer.json on first use; a later mismatch is refused (one data dir, one provider).
 */
export async function openIssuer(settings: IssuerSettings, deps: IssuerDeps): Promise<OpenIssuer> {
  const groups = checkGroups(settings.groups, '--group');
  if (settings.apiServer !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(settings.apiServer);
    } catch {
      url = undefined;
    }
    if (url?.protocol !== 'https:') {
      throw configError(
        `--api-server-url ${JSON.stringify(settings.apiServer)} is not an https URL`,
        '--api-server-url',
      );
    }
  }
  let apiServerCaPem: string | undefined;
  if (settings.apiServerCaFile !== undefined) {
    const file = resolve(deps.cwd, settings.apiServerCaFile);
    apiServerCaPem = await readFile(file, 'utf8').catch((cause: unknown) => {
      throw configError(`cannot read --api-server-ca ${file}: ${(cause as Error).message}`, file);
    });
    decodeCertificatesPem(apiServerCaPem, { file, flag: '--api-server-ca', code: 'ERR_ISSUER_CONFIG' });
  }

  const { state, providerClusterID } =
    settings.state === 'kubernetes' ? await openKubernetes(settings, deps) : await openDataDirState(settings, deps);
  let signer: Signer;
  try {
    if (settings.signer === 'kubernetes') {
      const { kubernetesSignerFromSettings } = await import('./signer/kubernetes-signer.js');
      signer = await kubernetesSignerFromSettings(settings, deps);
    } else {
      signer = embeddedSigner(state.clientCa);
    }
  } catch (error) {
    await state.close();
    throw error;
  }
  const issuer = new Issuer({
    providerClusterID,
    trust: state.trust,
    nonces: state.nonces,
    signer,
    groups,
    nonceTtlMs: settings.nonceTtlMs,
    certLifetimeMs: settings.certLifetimeMs,
    liqoCompat: settings.liqoCompat,
    ...(settings.apiServer === undefined ? {} : { apiServer: settings.apiServer }),
    ...(apiServerCaPem === undefined ? {} : { apiServerCaPem }),
    now: deps.now,
    ...(deps.log === undefined || deps.logHandshakes === false ? {} : { log: deps.log }),
  });
  return {
    issuer,
    state,
    providerClusterID,
    async close() {
      await signer.close?.();
      await state.close();
    },
  };
}

async function openKubernetes(
  settings: IssuerSettings,
  deps: IssuerDeps,
): Promise<{ state: IssuerState; providerClusterID: string }> {
  if (settings.providerClusterID === undefined) {
    throw configError('--state kubernetes needs --cluster-id', '--cluster-id');
  }
  const providerClusterID = checkClusterId(settings.providerClusterID, '--cluster-id');
  const { openKubernetesState } = await import('./state/kubernetes/kubernetes-state.js');
  return { state: await openKubernetesState(settings, providerClusterID, deps), providerClusterID };
}

/** The trust records of `--state kubernetes` (for `issuer trust|untrust|list`): no CA, no nonces. */
export async function openKubernetesTrust(
  settings: IssuerSettings,
  deps: { env: Env; cwd: string },
): Promise<{ store: import('./state/kubernetes/trust-config-maps.js').KubernetesTrustStore; close(): Promise<void> }> {
  const [{ KubernetesTrustStore }, { stateConnection }] = await Promise.all([
    import('./state/kubernetes/trust-config-maps.js'),
    import('./state/kubernetes/connection.js'),
  ]);
  const { conn, namespace } = await stateConnection(settings, deps);
  return { store: new KubernetesTrustStore(conn, namespace), close: () => conn.close() };
}

/** Opens the data dir (creating it), locks it and replays the nonce journal. */
async function openDataDirState(
  settings: IssuerSettings,
  deps: IssuerDeps,
): Promise<{ state: IssuerState; providerClusterID: string }> {
  if (settings.dataDir === undefined) {
    throw new CredentialsError('ERR_USAGE', '--state data-dir needs --data-dir', { path: '--data-dir' });
  }
  const dataDir = resolve(deps.cwd, settings.dataDir);
  const now = deps.now();
  // The HTTPS pair from files is checked before anything is created or locked.
  const tls =
    settings.tlsCertFile !== undefined && settings.tlsKeyFile !== undefined
      ? {
          material: await servingMaterialFromFiles(settings.tlsCertFile, settings.tlsKeyFile, deps.cwd, now),
          source: settings.tlsCertFile,
        }
      : undefined;
  const recordFile = join(dataDir, 'issuer.json');
  await ensurePrivateDir(dataDir);
  // Lock first: a second issuer on a fresh dir would otherwise create its own CAs over the first one's.
  const lock: DataDirLock = await lockDataDir(dataDir, deps.holder);
  let nonces: NonceStore | undefined;
  try {
    const recorded = await readOptional(recordFile);
    const providerClusterID = recordedProvider(recorded, settings, dataDir);
    const data = await openDataDir(dataDir, providerClusterID, now);
    if (recorded === undefined) {
      await writeFileAtomic(recordFile, `${JSON.stringify({ providerClusterID } satisfies IssuerRecord)}\n`);
    }
    nonces = await NonceStore.open(data.noncesFile, now, { now: deps.now });
    const opened = nonces;
    const state = dataDirState(
      data,
      new TrustStore(dataDir),
      opened,
      {
        // Ready while the data dir is still locked by this process and writable.
        checkReady: () => lock.check(),
        async close() {
          await opened.close();
          await lock.release();
        },
      },
      tls,
    );
    return { state, providerClusterID };
  } catch (error) {
    await nonces?.close();
    await lock.release();
    throw error;
  }
}
