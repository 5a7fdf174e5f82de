/**
 * `clusterprofile keygen --out FILE [--algorithm ed25519|ecdsa-p256|rsa-2048] [--force]`: make a consumer cluster's
 * key pair for the tenant-cert handshake. The private key is written as PKCS#8 PEM to FILE (mode 0600, created
 * atomically, never overwritten without `--force`); the public key is printed on stdout as PEM SPKI — exactly what
 * `clusterprofile issuer trust --public-key` (and `openssl pkey -pubout`) takes.
 *
 * Ed25519 is the default; ECDSA P-256 and RSA-2048 exist for API servers that reject Ed25519 client certificates
 * (liqo#2998: Azure AKS).
 *
 * @example
 * ```sh
 * clusterprofile keygen --out ~/.kube/clusterprofile/consumer.key > consumer.pub
 * ```
 */
import { randomBytes } from 'node:crypto';
import { chmod, link, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { CredentialsError } from '../../base/errors.js';
import { generateClusterKeyPair, KEY_ALGORITHMS, type KeyAlgorithm } from '../../providers/tenant-cert/index.js';
import type { CommandArgs, CommandContext } from '../command.js';

export interface KeygenOptions {
  out: string;
  algorithm?: KeyAlgorithm;
  force?: boolean;
  /** Relative `out` paths are resolved against this (the process cwd by default). */
  cwd?: string;
}

/**
 * Generates a key pair and writes the private key to `options.out` with mode 0600. The file appears complete or
 * not at all (written to a temporary file in the same directory, then linked — which refuses an existing file — or
 * renamed over it with `force`). Returns the public key PEM.
 */
export async function keygen(options: KeygenOptions): Promise<string> {
  const out = resolve(options.cwd ?? process.cwd(), options.out);
  const pair = generateClusterKeyPair(options.algorithm ?? 'ed25519');
  const temp = join(dirname(out), `.${basename(out)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(pair.privateKeyPem);
      await handle.sync();
    } finally {
      await handle.close();
    }
    // The umask can only remove bits, but be explicit.
    await chmod(temp, 0o600);
    if (options.force === true) {
      await rename(temp, out);
    } else {
      await link(temp, out);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new CredentialsError('ERR_KEYGEN_EXISTS', `${out} already exists; not overwriting a key`, {
        path: out,
        hint: 'choose another --out, or pass --force to replace the key (the issuer must then trust the new public key)',
        cause: error,
      });
    }
    throw new CredentialsError('ERR_KEYGEN_WRITE', `cannot write the key to ${out}: ${(error as Error).message}`, {
      path: out,
      cause: error,
    });
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  return pair.publicKeyPem;
}

export function builder(parser: Argv): Argv<object> {
  return parser
    .usage(
      '$0 keygen --out FILE [--algorithm ed25519|ecdsa-p256|rsa-2048] [--force]\n\nMake a cluster key pair: the private key (PKCS#8 PEM, mode 0600) goes to FILE, the public key (PEM SPKI, for `clusterprofile issuer trust --public-key`) to stdout.',
    )
    .option('out', {
      type: 'string',
      demandOption: true,
      describe: 'file for the private key (created with mode 0600)',
    })
    .option('algorithm', {
      type: 'string',
      choices: [...KEY_ALGORITHMS],
      default: 'ed25519',
      describe: 'key type; ecdsa-p256 or rsa-2048 for API servers that reject Ed25519 client certificates',
    })
    .option('force', { type: 'boolean', default: false, describe: 'replace an existing FILE' });
}

export async function run(args: CommandArgs, ctx: CommandContext): Promise<number> {
  const publicKeyPem = await keygen({
    out: String(args['out']),
    algorithm: args['algorithm'] as KeyAlgorithm,
    force: args['force'] === true,
    cwd: ctx.cwd,
  });
  ctx.io.stdout.write(publicKeyPem);
  return 0;
}
