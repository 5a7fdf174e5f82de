// Composition root of the clusterprofile-oidc binary.
import { runPlugin } from '../../plugin/run.js';
import { oidcProvider } from './provider.js';

export const run = runPlugin(oidcProvider);
