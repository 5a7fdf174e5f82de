// Composition root of the clusterprofile-oidc binary.
import { runPlugin } from '../../plugin/run.js';
import { oidcProvider } from './provider.js';

/**
 * The lock also covers an interactive login (so parallel kubectl runs show one prompt and then share its token):
 * others wait for as long as a login may take (`--login-timeout` default 300 s) plus a margin, not the runtime's 60 s.
 */
export const run = runPlugin(oidcProvider, { lockTimeoutMs: 330_000 });
