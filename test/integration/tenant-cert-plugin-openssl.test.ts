// Interop with an independent implementation: the Tenant the plugin sends (built in process, as on a cache miss)
// is checked by the openssl CLI — the CSR's self-signature and subject, and the context-bound signature over the
// exact message bytes — for each key type `clusterprofile keygen` makes.
import { execFileSync } from 'node:child_process';
import { createPrivateKey, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTenant } from '../../src/wire/tenant-cert/documents.js';
import { tenantMessage } from '../../src/wire/tenant-cert/message.js';
import { CLI, runNode } from '../helpers/tenant-cert-plugin-run.js';

const openssl = (args: string[]): string =>
  execFileSync('openssl', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

describe('openssl verifies what the plugin signs', () => {
  it.each(['ed25519', 'ecdsa-p256', 'rsa-2048'])(
    '%s: CSR self-signature, subject and the Tenant signature',
    async (algorithm) => {
      const dir = mkdtempSync(join(tmpdir(), 'cpc-tc-openssl-'));
      const keyFile = join(dir, 'key.pem');
      const made = await runNode(CLI, ['keygen', '--out', keyFile, '--algorithm', algorithm]);
      expect(made.code, made.stderr).toBe(0);
      writeFileSync(join(dir, 'pub.pem'), made.stdout);
      // openssl derives the same public key from the private key keygen wrote.
      expect(openssl(['pkey', '-in', keyFile, '-pubout'])).toBe(made.stdout);

      const nonce = randomBytes(64).toString('base64');
      const tenant = await buildTenant({
        privateKey: createPrivateKey(readFileSync(keyFile, 'utf8')),
        consumerClusterID: 'consumer-1',
        providerClusterID: 'member-1',
        nonce,
      });
      const csrPem = Buffer.from(tenant.spec.csr, 'base64').toString('utf8');
      writeFileSync(join(dir, 'csr.pem'), csrPem);
      const verified = execFileSync('openssl', ['req', '-in', join(dir, 'csr.pem'), '-verify', '-noout', '-subject'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      expect(verified).toMatch(/subject=CN\s*=\s*consumer-1/);
      expect(openssl(['req', '-in', join(dir, 'csr.pem'), '-noout', '-pubkey'])).toBe(made.stdout);

      // The CSR hash in the message is over the DER as openssl re-encodes it (independent of our PEM wrapping).
      const csrDer = execFileSync('openssl', ['req', '-in', join(dir, 'csr.pem'), '-outform', 'DER'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      writeFileSync(
        join(dir, 'message.bin'),
        tenantMessage({ providerClusterID: 'member-1', consumerClusterID: 'consumer-1', nonce, csrDer }),
      );
      writeFileSync(join(dir, 'signature.bin'), Buffer.from(tenant.spec.signature, 'base64'));
      const out =
        algorithm === 'ed25519'
          ? openssl([
              'pkeyutl',
              '-verify',
              '-pubin',
              '-inkey',
              join(dir, 'pub.pem'),
              '-rawin',
              '-in',
              join(dir, 'message.bin'),
              '-sigfile',
              join(dir, 'signature.bin'),
            ])
          : openssl([
              'dgst',
              '-sha256',
              '-verify',
              join(dir, 'pub.pem'),
              '-signature',
              join(dir, 'signature.bin'),
              join(dir, 'message.bin'),
            ]);
      expect(out).toMatch(/Signature Verified Successfully|Verified OK/);

      // A flipped byte in the message is refused by openssl: the check above can fail.
      const tampered = readFileSync(join(dir, 'message.bin'));
      tampered.writeUInt8(tampered.readUInt8(tampered.length - 1) ^ 1, tampered.length - 1);
      writeFileSync(join(dir, 'tampered.bin'), tampered);
      const args =
        algorithm === 'ed25519'
          ? [
              'pkeyutl',
              '-verify',
              '-pubin',
              '-inkey',
              join(dir, 'pub.pem'),
              '-rawin',
              '-in',
              join(dir, 'tampered.bin'),
              '-sigfile',
              join(dir, 'signature.bin'),
            ]
          : [
              'dgst',
              '-sha256',
              '-verify',
              join(dir, 'pub.pem'),
              '-signature',
              join(dir, 'signature.bin'),
              join(dir, 'tampered.bin'),
            ];
      expect(() => openssl(args)).toThrow();
    },
  );
});
