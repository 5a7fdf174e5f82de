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
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import { chmod, link, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { CredentialsError } from '../../library/errors.js';

export type KeygenErrorCode = 'ERR_KEYGEN_ALGORITHM' | 'ERR_KEYGEN_EXISTS' | 'ERR_KEYGEN_WRITE';

export const keyAlgorithms = ['ed25519', 'ecdsa-p256', 'rsa-2048'] as const;
export type KeyAlgorithm = (typeof keyAlgorithms)[number];

export interface ClusterKeyPair {
  privateKey: KeyObject;
  /** PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). */
  privateKeyPem: string;
  /** SPKI PEM (`-----BEGIN PUBLIC KEY-----`). */
  publicKeyPem: string;
}

/** A fresh key pair of the given algorithm. */
export function generateClusterKey(algorithm: KeyAlgorithm): ClusterKeyPair {
  const pair =
    algorithm === 'ed25519'
      ? generateKeyPairSync('ed25519')
      : algorithm === 'ecdsa-p256'
        ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : algorithm === 'rsa-2048'
          ? generateKeyPairSync('rsa', { modulusLength: 2048 })
          : undefined;
  if (pair === undefined) {
    throw new CredentialsError<KeygenErrorCode>('ERR_KEYGEN_ALGORITHM', `unknown key algorithm "${String(algorithm)}"`, {
      path: '--algorithm',
      hint: `use one of ${keyAlgorithms.join(', ')}`,
    });
  }
  return {
    privateKey: pair.privateKey,
    privateKeyPem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

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
  const pair = generateClusterKey(options.algorithm ?? 'ed25519');
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
      throw new CredentialsError<KeygenErrorCode>('ERR_KEYGEN_EXISTS', `${out} already exists; not overwriting a key`, {
        path: out,
        hint: 'choose another --out, or pass --force to replace the key (the issuer must then trust the new public key)',
        cause: error,
      });
    }
    throw new CredentialsError<KeygenErrorCode>('ERR_KEYGEN_WRITE', `cannot write the key to ${out}: ${(error as Error).message}`, {
      path: out,
      cause: error,
    });
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  return pair.publicKeyPem;
}
