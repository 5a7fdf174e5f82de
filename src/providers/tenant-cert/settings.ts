/**
 * The tenant-cert plugin's settings. Runs on every invocation (the cache-hit path included), so it uses only
 * `node:fs` and `node:path` — not even `node:crypto` (loading it would be most of a cache hit's CPU): CA bundles are
 * checked for shape here (PEM blocks of DER SEQUENCEs) and parsed as X.509 on a cache miss
 * ({@link parseCertificateBundle}).
 *
 * - Cluster-specific, from `spec.cluster.config` (the ClusterProfile's `client.authentication.k8s.io/exec`
 *   extension, handed over by client-go when the kubeconfig sets `provideClusterInfo: true`): `issuerURL`,
 *   `issuerCA` (base64 of the PEM CA that signs the issuer's serving certificate: `DIR/serving-ca.crt`),
 *   `providerClusterID`.
 * - Controller-wide, from flags: `--cluster-id` (ours, the consumer's), `--key-file` (PKCS#8 PEM),
 *   `--identity-dir` (where `clusterprofile identity import` stores Identities).
 */
import { isAbsolute, join, resolve } from 'node:path';
import { CredentialsError, quote, quoteUrl } from '../../base/errors.js';
import type { Env } from '../../base/io.js';
import { describePem } from '../../base/pem-file.js';
import { sha256Hex } from '../../base/sha256.js';
import { readPrivateFile, type PrivacyProblem } from '../../base/private-files/privacy.js';
import { checkClusterId, CLUSTER_ID_RULE, isClusterId } from '../../wire/tenant-cert/cluster-id.js';

export interface TenantCertClusterConfig {
  /** The issuer's base URL (https only), normalised, without a trailing slash. Absent: imported identities only. */
  issuerURL?: string;
  /** PEM of the CA(s) trusted for the issuer's HTTPS — and nothing else. */
  issuerCA?: string;
  /** The provider (member) cluster's ID: whose issuer we talk to, whose Identity we serve. */
  providerClusterID: string;
  /** Optional: PEM of the issuer's client CA (`DIR/client-ca.crt`); issued certificates must chain to it. */
  clientCA?: string;
}

export interface TenantCertSettings extends TenantCertClusterConfig {
  /** Our (the consumer's) cluster ID: the certificate's CN. */
  clusterID: string;
  /** Absolute path of the private key. */
  keyFile: string;
  /** The key file's PEM (PKCS#8), read once. Never leaves the process except as `clientKeyData`. */
  keyPem: string;
  /** SHA-256 (hex) of the key file: part of the cache key, so a re-key never serves a certificate for the old key. */
  keyDigest: string;
  /** Absolute path of the directory `clusterprofile identity import` writes to. */
  identityDir: string;
}

function configError(field: string, message: string, hint?: string): CredentialsError {
  return new CredentialsError('ERR_TENANT_CERT_CONFIG', `spec.cluster.config.${field}: ${message}`, {
    path: `spec.cluster.config.${field}`,
    ...(hint === undefined ? {} : { hint }),
  });
}

/** Strict standard base64 (whitespace allowed between groups, as in YAML block scalars). */
export function decodeBase64Strict(value: string): Buffer | undefined {
  const compact = value.replace(/\s+/g, '');
  if (compact.length === 0 || compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
    return undefined;
  }
  return Buffer.from(compact, 'base64');
}

/** The PEM CERTIFICATE blocks of a bundle, in order. */
export function certificateBlocks(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/**
 * The shape check of a PEM bundle without an X.509 parser: every block's body is base64 of a DER SEQUENCE. Returns
 * the blocks, or an error message.
 */
export function checkCertificateBlocks(pem: string): { blocks: string[] } | { problem: string } {
  const blocks = certificateBlocks(pem);
  if (blocks.length === 0) {
    return { problem: 'holds no PEM certificate (expected base64 of "-----BEGIN CERTIFICATE-----...")' };
  }
  for (const [index, block] of blocks.entries()) {
    const body = block.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '');
    const der = decodeBase64Strict(body);
    // A certificate is a DER SEQUENCE (0x30) and never shorter than 64 bytes; the full parse comes on a cache miss.
    if (der === undefined || der.length < 64 || der[0] !== 0x30) {
      return { problem: `certificate ${index + 1} of the bundle cannot be parsed (not base64 of a DER certificate)` };
    }
  }
  return { blocks: blocks.map((block) => `${block}\n`) };
}

/** The certificates of a PEM bundle, parsed (node:crypto: only on a cache miss). */
export async function parseCertificateBundle(pem: string): Promise<import('node:crypto').X509Certificate[]> {
  const { X509Certificate } = await import('node:crypto');
  return certificateBlocks(pem).map((block) => new X509Certificate(block));
}

/**
 * Validates `spec.cluster.config`. Every problem names the field (`spec.cluster.config.issuerURL`). `issuerURL` and
 * `issuerCA` go together; both may be left out only when an imported Identity is to be served.
 */
export function parseClusterConfig(config: unknown): TenantCertClusterConfig {
  if (config === undefined || config === null) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_CONFIG',
      'spec.cluster.config is missing: the plugin needs providerClusterID, issuerURL and issuerCA from the cluster',
      {
        path: 'spec.cluster.config',
        hint: 'set provideClusterInfo: true in the exec config and put the settings in the cluster extension "client.authentication.k8s.io/exec"',
      },
    );
  }
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new CredentialsError('ERR_TENANT_CERT_CONFIG', 'spec.cluster.config must be an object', {
      path: 'spec.cluster.config',
    });
  }
  const record = config as Record<string, unknown>;

  const provider = record['providerClusterID'];
  if (provider === undefined) {
    throw configError('providerClusterID', 'is missing (the provider cluster ID the issuer runs as)');
  }
  if (!isClusterId(provider)) {
    throw configError('providerClusterID', `${quote(provider)} is not a cluster ID (${CLUSTER_ID_RULE})`);
  }

  const url = record['issuerURL'];
  const ca = record['issuerCA'];
  if (url === undefined && ca === undefined) {
    return { providerClusterID: provider };
  }
  if (url === undefined) {
    throw configError('issuerURL', 'is missing (issuerCA is set)', 'e.g. https://issuer.example:8443');
  }
  if (typeof url !== 'string') {
    throw configError('issuerURL', 'must be a string');
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_CONFIG',
      `spec.cluster.config.issuerURL: ${quoteUrl(url)} is not a URL`,
      {
        path: 'spec.cluster.config.issuerURL',
        cause,
      },
    );
  }
  if (parsed.protocol !== 'https:') {
    throw configError(
      'issuerURL',
      `must be an https:// URL, got ${quoteUrl(url)}`,
      'the issuer only speaks HTTPS; TLS verification is always on',
    );
  }
  if (parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
    throw configError('issuerURL', `must not carry credentials, a query or a fragment: ${quoteUrl(url)}`);
  }
  if (ca === undefined) {
    throw configError('issuerCA', 'is missing: base64 of the PEM CA the issuer serves with (its DIR/serving-ca.crt)');
  }
  const clientCA = record['clientCA'];
  return {
    providerClusterID: provider,
    issuerURL: parsed.href.replace(/\/+$/, ''),
    issuerCA: decodeCaField('issuerCA', ca, 'DIR/serving-ca.crt'),
    ...(clientCA === undefined ? {} : { clientCA: decodeCaField('clientCA', clientCA, 'DIR/client-ca.crt') }),
  };
}

/** A `spec.cluster.config` field holding base64 of a PEM CA bundle, as normalised PEM. */
function decodeCaField(field: string, value: unknown, file: string): string {
  if (typeof value !== 'string') {
    throw configError(field, 'must be a string (base64 of a PEM CA bundle)');
  }
  const decoded = decodeBase64Strict(value);
  if (decoded === undefined) {
    throw configError(field, 'is not valid base64', `base64 -w0 < ${file}`);
  }
  const checked = checkCertificateBlocks(decoded.toString('utf8'));
  if ('problem' in checked) {
    throw configError(field, checked.problem, `base64 -w0 < ${file}`);
  }
  return checked.blocks.join('');
}

/**
 * Reads the private key file: it must be ours alone (no group/other permission bits, as ssh requires) — or a Secret
 * volume's file read-only for our group (`defaultMode: 0440` with `fsGroup`: root-owned, group one of ours, no write
 * bit) — and hold a PKCS#8 PEM key. Parsing happens on a cache miss only.
 */
export function readKeyFile(file: string): { keyPem: string; keyDigest: string } {
  // Its owner is not checked: a key provisioned for us by another user (a mounted volume) is fine if only we can read it.
  const read = readPrivateFile(file, { owner: false, groupReadOnly: true, maxBytes: 1 << 20 });
  if ('problem' in read) {
    throw keyFileError(read.problem, file);
  }
  const keyPem = read.text;
  if (!/-----BEGIN PRIVATE KEY-----[\s\S]+-----END PRIVATE KEY-----/.test(keyPem)) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_KEY_FILE',
      `the key file is not a PKCS#8 PEM private key ("-----BEGIN PRIVATE KEY-----"): it holds ${describePem(keyPem)}`,
      { path: file, hint: 'convert with: openssl pkcs8 -topk8 -nocrypt -in OLD -out NEW' },
    );
  }
  return { keyPem, keyDigest: sha256Hex(keyPem) };
}

function keyFileError(problem: PrivacyProblem, file: string): CredentialsError {
  if (problem.kind === 'mode') {
    const owner =
      problem.uid === undefined
        ? ''
        : `, owner ${problem.uid}${problem.gid === undefined ? '' : `, group ${problem.gid}`}`;
    // The hint stays one command that fixes the file; the message says what else is accepted.
    return new CredentialsError(
      'ERR_TENANT_CERT_KEY_FILE',
      `the key file is accessible by others (mode ${problem.mode.toString(8).padStart(4, '0')}${owner}); refusing to use it. Accepted: ` +
        "no permission for group or others (0600, 0400); or read-only for one of this process's groups (0440 or 0040, owned by root or this user, group not 0), " +
        "as a Secret volume with defaultMode: 0440 and the pod's fsGroup gives it",
      { path: file, hint: `chmod 600 ${file}` },
    );
  }
  if (problem.kind === 'type') {
    return new CredentialsError(
      'ERR_TENANT_CERT_KEY_FILE',
      `the key file ${file} is ${problem.found === 'directory' ? 'a directory' : 'not a regular file'}`,
      {
        path: file,
        hint: 'pass the PKCS#8 PEM file that clusterprofile keygen --out FILE made',
      },
    );
  }
  const reason =
    problem.kind === 'io'
      ? (problem.cause as Error).message
      : problem.kind === 'missing'
        ? 'no such file'
        : problem.kind;
  return new CredentialsError('ERR_TENANT_CERT_KEY_FILE', `cannot read the key file ${file}: ${reason}`, {
    path: file,
    hint: 'make one with: clusterprofile keygen --out FILE',
    ...(problem.kind === 'io' ? { cause: problem.cause } : {}),
  });
}

/** Where `clusterprofile identity import` stores the Identity of `provider` for `consumer`. */
export function identityFile(identityDir: string, consumerClusterID: string, providerClusterID: string): string {
  return join(identityDir, consumerClusterID, `${providerClusterID}.yaml`);
}

/** `--identity-dir`, else `$HOME/.kube/clusterprofile/identities`. */
export function defaultIdentityDir(env: Env, flag: string | undefined, cwd: string): string {
  if (flag !== undefined && flag !== '') {
    return isAbsolute(flag) ? flag : resolve(cwd, flag);
  }
  const home = env['HOME'] ?? env['USERPROFILE'];
  if (home === undefined || home === '') {
    throw new CredentialsError('ERR_TENANT_CERT_FLAG', 'no --identity-dir given and HOME is not set', {
      path: '--identity-dir',
    });
  }
  return join(home, '.kube', 'clusterprofile', 'identities');
}

export interface TenantCertFlags {
  'cluster-id': string;
  'key-file': string;
  'identity-dir'?: string | undefined;
}

/** All settings from the flags, the environment and `spec.cluster.config`. */
export function tenantCertSettings(flags: TenantCertFlags, config: unknown, env: Env, cwd: string): TenantCertSettings {
  const clusterID = checkClusterId(flags['cluster-id'], '--cluster-id');
  const cluster = parseClusterConfig(config);
  const keyFile = resolve(cwd, flags['key-file']);
  const key = readKeyFile(keyFile);
  return {
    ...cluster,
    clusterID,
    keyFile,
    ...key,
    identityDir: defaultIdentityDir(env, flags['identity-dir'], cwd),
  };
}

export interface TenantCertPluginSettings extends TenantCertSettings {
  /** Overall handshake deadline (ms). */
  timeoutMs: number;
}

/** What the cache entry keeps besides the status. */
export interface TenantCertState {
  source: 'issuer' | 'imported';
  serialNumber: string;
  notAfter: string;
}
