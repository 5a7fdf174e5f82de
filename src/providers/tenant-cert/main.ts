/**
 * The composition root of `clusterprofile-tenant-cert`: the tenant-cert provider wrapped by the plugin runtime.
 * bin/clusterprofile-tenant-cert.mjs calls `run(process.argv.slice(2), process.env, process)`.
 */
import { runPlugin } from '../../plugin/run.js';
import { tenantCertProvider } from './plugin.js';

/**
 * A process waiting for the cache lock waits longer than one handshake may take (`--timeout`, 30 s by default, plus
 * start-up on a loaded machine): many parallel cold starts (a controller fanning out, 100 kubectl runs) then end
 * with one handshake instead of waiters giving up while the holder is still talking to the issuer.
 */
export const LOCK_TIMEOUT_MS = 180_000;

export const run = runPlugin(tenantCertProvider, { lockTimeoutMs: LOCK_TIMEOUT_MS });
