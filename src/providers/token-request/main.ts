// Composition root of the clusterprofile-token-request binary.
import { runPlugin } from '../../plugin/run.js';
import { tokenRequestProvider } from './provider.js';

export const run = runPlugin(tokenRequestProvider);
