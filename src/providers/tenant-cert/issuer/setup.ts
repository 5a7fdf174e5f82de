/**
 * The composition of an issuer from command-line settings, shared by `clusterprofile issuer serve` and the manual
 * flow (`clusterprofile tenant nonce|accept`): data dir, lock, nonce journal, trust store, signer, policy.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseDocument } from '../../../core/document.js';
import { CredentialsError } from '../../../core/errors.js';
import type { Env } from '../../../core/io.js';
import { openDataDir, type DataDir } from './data-dir.js';
import { embeddedSigner } from './embedded-signer.js';
import { ensurePrivateDir, lockDataDir, readOptional, writeFileAtomic, type DataDirLock } from './files.js';
import { Issuer } from './issuer.js';
import { NonceStore } from './nonces.js';
import { checkGroups } from './policy.js';
import type { IssuerSettings } from './settings.js';
import type { Signer } from './signer.js';

export type { IssuerSettings };
import { TrustStore } from './trust.js';
import { checkClusterId, isClusterId } from '../wire/cluster-id.js';

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
  data: DataDir;
  providerClusterID: string;
  /** Readiness of the state: the data dir still locked by this process and writable. */
  checkReady(signal: AbortSignal): Promise<void>;
  /** Nonces issued and neither used nor expired (the metrics gauge). */
  noncesOutstanding(): number;
  close(): Promise<void>;
}

interface IssuerRecord {
  providerClusterID: string;
}

function parseRecord(text: string, file: string): IssuerRecord {
  const hint = 'restore it from a backup, or write {"providerClusterID": "<the provider cluster ID>"}';
  const record = parseDocument(text, { source: file, code: 'ERR_ISSUER_DATA_DIR', format: 'json', message: `${file} does not name a provider cluster ID`, hint });
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
    throw configError(`the data dir ${dataDir} has no issuer yet`, '--data-dir', 'run clusterprofile issuer serve --cluster-id PROVIDER_ID first, or pass --provider-cluster-id');
  }
  return checkClusterId(settings.providerClusterID, '--cluster-id');
}

/**
 * Opens the data dir (creating it), locks it, replays the nonce journal and builds the issuer. The provider ID is
 * recorded in DATA_DIR/issuer.json on first use; a later mismatch is refused (one data dir, one provider).
 */
export async function openIssuer(settings: IssuerSettings, deps: { env: Env; now(): Date; cwd: string; holder: string; log?(line: string): void }): Promise<OpenIssuer> {
  const dataDir = resolve(deps.cwd, settings.dataDir);
  const groups = checkGroups(settings.groups, '--group');
  if (settings.apiServer !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(settings.apiServer);
    } catch {
      url = undefined;
    }
    if (url?.protocol !== 'https:') {
      throw configError(`--api-server-url ${JSON.stringify(settings.apiServer)} is not an https URL`, '--api-server-url');
    }
  }
  let apiServerCaPem: string | undefined;
  if (settings.apiServerCaFile !== undefined) {
    const file = resolve(deps.cwd, settings.apiServerCaFile);
    apiServerCaPem = await readFile(file, 'utf8').catch((cause: unknown) => {
      throw configError(`cannot read --api-server-ca ${file}: ${(cause as Error).message}`, file);
    });
    if (!apiServerCaPem.includes('-----BEGIN CERTIFICATE-----')) {
      throw configError(`--api-server-ca ${file} holds no PEM certificate`, file);
    }
  }

  const now = deps.now();
  const recordFile = join(dataDir, 'issuer.json');
  await ensurePrivateDir(dataDir);
  // Lock first: a second issuer on a fresh dir would otherwise create its own CAs over the first one's.
  const lock: DataDirLock = await lockDataDir(dataDir, deps.holder);
  let nonces: NonceStore | undefined;
  let signer: Signer | undefined;
  let data: DataDir;
  let providerClusterID: string;
  try {
    const recorded = await readOptional(recordFile);
    providerClusterID = recordedProvider(recorded, settings, dataDir);
    data = await openDataDir(dataDir, providerClusterID, now);
    if (recorded === undefined) {
      await writeFileAtomic(recordFile, `${JSON.stringify({ providerClusterID } satisfies IssuerRecord)}\n`);
    }
    nonces = await NonceStore.open(data.noncesFile, now, { now: deps.now });
    if (settings.signer === 'kubernetes') {
      const { kubernetesSignerFromSettings } = await import('./kubernetes-signer.js');
      signer = await kubernetesSignerFromSettings(settings, deps);
    } else {
      signer = embeddedSigner(data.clientCa);
    }
  } catch (error) {
    await nonces?.close();
    await lock.release();
    throw error;
  }
  const issuer = new Issuer({
    providerClusterID,
    trust: new TrustStore(dataDir),
    nonces,
    signer,
    groups,
    nonceTtlMs: settings.nonceTtlMs,
    certLifetimeMs: settings.certLifetimeMs,
    liqoCompat: settings.liqoCompat,
    ...(settings.apiServer === undefined ? {} : { apiServer: settings.apiServer }),
    ...(apiServerCaPem === undefined ? {} : { apiServerCaPem }),
    now: deps.now,
    ...(deps.log === undefined ? {} : { log: deps.log }),
  });
  const openedNonces = nonces;
  const openedSigner = signer;
  return {
    issuer,
    data,
    providerClusterID,
    checkReady: () => lock.check(),
    noncesOutstanding: () => openedNonces.count(deps.now()),
    async close() {
      await openedSigner.close?.();
      await openedNonces.close();
      await lock.release();
    },
  };
}
