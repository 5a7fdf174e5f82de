/**
 * The subcommands of `clusterprofile`. Adding one is one line: a module `./<name>.ts` exporting `builder` and `run`
 * (see ../command.ts), and its entry below.
 */
import type { CommandEntry } from '../command.js';

export const commands: readonly CommandEntry[] = [
  { command: 'kubeconfig', describe: 'Print a kubeconfig for one ClusterProfile whose user runs the exec plugin the providers file selects', load: () => import('./kubeconfig.js') },
];
