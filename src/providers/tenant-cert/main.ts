/**
 * The composition root of `clusterprofile-tenant-cert`: the tenant-cert provider wrapped by the plugin runtime.
 * bin/clusterprofile-tenant-cert.mjs calls `run(process.argv.slice(2), process.env, process)`.
 */
import { runPlugin } from '../../plugin/run.js';
import { tenantCertProvider } from './provider.js';

export const run = runPlugin(tenantCertProvider);
