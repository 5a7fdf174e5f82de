/**
 * The HTTPS certificate and key from files (`--tls-cert-file`, `--tls-key-file`): in a cluster, the `tls.crt`/`tls.key` of a
 * kubernetes.io/tls Secret (cert-manager's, or one made by hand), instead of the data dir's own serving CA. The pair is
 * read at start and then polled ({@link watchServingFiles}): a renewed Secret is served without a restart.
 */
import { X509Certificate, createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CredentialsError, isCredentialsError } from '../base/errors.js';
import { decodeCertificatesPem, decodePrivateKeyPem } from '../base/pem-file.js';
import type { LoopReport } from './background.js';
import type { ServingMaterial } from './state/issuer-cas.js';

const PAIR_HINT =
  'give the PEM certificate (chain) and its private key, e.g. tls.crt and tls.key of a kubernetes.io/tls Secret';

function tlsError(message: string, path: string, cause?: unknown): CredentialsError {
  return new CredentialsError('ERR_ISSUER_CONFIG', message, {
    path,
    hint: PAIR_HINT,
    ...(cause === undefined ? {} : { cause }),
  });
}

async function readPair(certPath: string, keyPath: string): Promise<{ certificatePem: string; keyPem: string }> {
  const certificatePem = await readFile(certPath, 'utf8').catch((cause: unknown) => {
    throw tlsError(`cannot read --tls-cert-file ${certPath}: ${(cause as Error).message}`, '--tls-cert-file', cause);
  });
  const keyPem = await readFile(keyPath, 'utf8').catch((cause: unknown) => {
    throw tlsError(`cannot read --tls-key-file ${keyPath}: ${(cause as Error).message}`, '--tls-key-file', cause);
  });
  return { certificatePem, keyPem };
}

/** The checks of a pair: a PEM certificate (leaf first) valid at `now` and the private key that matches it. */
function checkPair(
  pair: { certificatePem: string; keyPem: string },
  certPath: string,
  keyPath: string,
  now: Date,
): ServingMaterial {
  const { certificatePem, keyPem } = pair;
  const [leaf] = decodeCertificatesPem(certificatePem, {
    file: certPath,
    flag: '--tls-cert-file',
    code: 'ERR_ISSUER_CONFIG',
    hint: PAIR_HINT,
  }) as [X509Certificate];
  const key = decodePrivateKeyPem(keyPem, {
    file: keyPath,
    flag: '--tls-key-file',
    code: 'ERR_ISSUER_CONFIG',
    hint: PAIR_HINT,
  });
  if (!leaf.checkPrivateKey(key)) {
    throw tlsError(`--tls-key-file ${keyPath} is not the key of the certificate in ${certPath}`, '--tls-key-file');
  }
  if (Date.parse(leaf.validTo) <= now.getTime() || Date.parse(leaf.validFrom) > now.getTime()) {
    throw tlsError(
      `the certificate in ${certPath} is not valid now (${leaf.validFrom} .. ${leaf.validTo})`,
      '--tls-cert-file',
    );
  }
  return { certificatePem, keyPem, caPem: certificatePem };
}

/** Reads and checks the pair: a PEM certificate (leaf first) that is valid now and the private key that matches it. */
export async function servingMaterialFromFiles(
  certFile: string,
  keyFile: string,
  cwd: string,
  now: Date,
): Promise<ServingMaterial> {
  const certPath = resolve(cwd, certFile);
  const keyPath = resolve(cwd, keyFile);
  return checkPair(await readPair(certPath, keyPath), certPath, keyPath, now);
}

/** Which certificate is served, for a log line and a metric (public data only). */
export interface ServedCertificate {
  /** Hex, upper case, as openssl prints it. */
  serial: string;
  notAfter: Date;
}

/** The serial and notAfter of the leaf (the first certificate) of a PEM chain. */
export function servedCertificate(certificatePem: string): ServedCertificate {
  const leaf = new X509Certificate(certificatePem);
  return { serial: leaf.serialNumber.toUpperCase(), notAfter: new Date(leaf.validTo) };
}

function pairHash(pair: { certificatePem: string; keyPem: string }): string {
  return createHash('sha256').update(pair.certificatePem).update('\0').update(pair.keyPem).digest('hex');
}

export interface ServingFilesWatchOptions {
  certFile: string;
  keyFile: string;
  cwd: string;
  /** How often the files are read (a few seconds; they are small). */
  intervalMs: number;
  now(): Date;
  /** The pair served now (as read at start): a poll that reads the same text changes nothing. */
  current: { certificatePem: string; keyPem: string };
  /** A new pair passed every check: serve it. */
  apply(material: ServingMaterial): void;
  /**
   * The files hold a pair that fails a check (half written, mismatched, expired) or cannot be read; the served pair
   * stays. Called once per distinct content and error, not on every poll.
   */
  refused(error: CredentialsError): void;
  /** Told after every poll: succeeded (the files hold the pair served), or failed with the refusal. */
  report?: LoopReport;
}

export interface ServingFilesWatch {
  /** One poll now, after any under way: what it did. */
  check(): Promise<'unchanged' | 'reloaded' | 'refused'>;
  stop(): void;
}

/**
 * Polls the pair and hands a new one to `apply` once it passes the start-up checks. Kubernetes updates a Secret volume
 * by swapping its `..data` symlink, which file watchers miss or see half way; a poll of the content sees both files
 * after the swap. A pair that fails is read again once at once (the two files of a hand-made update may land one
 * after the other) before it is refused.
 */
export function watchServingFiles(options: ServingFilesWatchOptions): ServingFilesWatch {
  const certPath = resolve(options.cwd, options.certFile);
  const keyPath = resolve(options.cwd, options.keyFile);
  let served = pairHash(options.current);
  let lastRefusal = '';
  let lastFailure: CredentialsError | undefined;
  let tail: Promise<unknown> = Promise.resolve();
  let pending = 0;

  async function poll(): Promise<'unchanged' | 'reloaded' | 'refused'> {
    let failure: CredentialsError | undefined;
    let failedHash = '';
    for (let attempt = 0; attempt < 2; attempt++) {
      let pair: { certificatePem: string; keyPem: string };
      try {
        pair = await readPair(certPath, keyPath);
      } catch (error) {
        failure = error as CredentialsError;
        failedHash = '';
        continue;
      }
      const hash = pairHash(pair);
      if (hash === served) {
        lastRefusal = '';
        return 'unchanged';
      }
      if (attempt > 0 && hash === failedHash) break;
      try {
        // apply (the TLS context) may refuse what the checks let through: that is a refusal too.
        options.apply(checkPair(pair, certPath, keyPath, options.now()));
        served = hash;
        lastRefusal = '';
        return 'reloaded';
      } catch (error) {
        failure = isCredentialsError(error)
          ? error
          : tlsError(`the pair in ${certPath} and ${keyPath} was refused`, '--tls-cert-file', error);
        failedHash = hash;
      }
    }
    lastFailure = failure;
    const refusal = `${failedHash} ${failure?.message ?? ''}`;
    if (failure !== undefined && refusal !== lastRefusal) {
      lastRefusal = refusal;
      options.refused(failure);
    }
    return 'refused';
  }

  function check(): Promise<'unchanged' | 'reloaded' | 'refused'> {
    pending++;
    const next = tail
      .then(poll)
      .then((outcome) => {
        if (outcome === 'refused') options.report?.failed(lastFailure);
        else options.report?.succeeded();
        return outcome;
      })
      .finally(() => pending--);
    tail = next.catch(() => undefined);
    return next;
  }

  // A tick while a poll is still queued adds none.
  const timer = setInterval(() => {
    if (pending === 0) void check();
  }, options.intervalMs);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}
