/**
 * The subcommands of `clusterprofile`. Adding one is one line: a module `./<name>.ts` exporting `builder` and `run`
 * (see ../command.ts), and its entry below.
 */
import type { CommandEntry } from '../command.js';

export const commands: readonly CommandEntry[] = [
  {
    command: 'kubeconfig',
    describe: 'Print a kubeconfig for one ClusterProfile whose user runs the exec plugin the providers file selects',
    load: () => import('./kubeconfig.js'),
  },
  {
    command: 'keygen',
    describe:
      'Make a cluster key pair for tenant-cert: private key (PKCS#8, 0600) to --out, public key (PEM SPKI) to stdout',
    load: () => import('./keygen.js'),
  },
  {
    command: 'identity <action> [file]',
    describe:
      "Consumer side of the manual tenant-cert flow: import an Identity (ours or Liqo's) for the plugin to serve",
    load: () => import('./identity.js'),
  },
  {
    command: 'token <action>',
    describe:
      'Mint member-cluster tokens into hub Secrets for the Secret Reader or kubeconfig-secretreader plugin (sync)',
    load: () => import('./token.js'),
  },
  {
    command: 'issuer <action>',
    describe:
      'Provider side of tenant-cert: serve the issuer (nonces, Tenants -> Identities), trust/untrust/list consumer keys',
    load: () => import('./issuer.js'),
  },
  {
    command: 'fleet <action>',
    describe:
      'The fleet of one hub namespace through ClusterProfileFleet: status (one row per member) or watch (its events)',
    load: () => import('./fleet.js'),
  },
  {
    command: 'tenant <action> [file]',
    describe:
      'The manual tenant-cert flow: nonce (provider), generate a Tenant (consumer), accept a Tenant -> Identity (provider); apply --to-cluster: the declarative flow (consumer)',
    load: () => import('./tenant.js'),
  },
];
