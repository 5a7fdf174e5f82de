/**
 * The consumers the provider's admin trusts: one file per consumer, `DATA_DIR/trusted/<clusterID>.json` (schema
 * `issuer-trust-record`), replaced atomically. A running issuer reads the record on every Tenant, so `issuer trust` /
 * `issuer untrust` take effect at once, without a restart or a lock.
 */
import type { KeyObject } from 'node:crypto';
import { statSync } from 'node:fs';
import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { checkClusterId, isClusterId } from '../../../wire/tenant-cert/cluster-id.js';
import { parseTrustRecord, trustRecordText, type TrustRecord, type TrustedConsumer } from '../trust-record.js';
import { ensurePrivateDir, readOptional, writeFileAtomic } from './files.js';

export class TrustStore {
  readonly dir: string;
  /** Parsed records, reused while the file's inode, size and mtime are unchanged (a stat instead of a read). */
  readonly #cache = new Map<string, { stamp: string; consumer: TrustedConsumer }>();

  constructor(dataDir: string) {
    this.dir = join(dataDir, 'trusted');
  }

  #file(clusterID: string): string {
    return join(this.dir, `${checkClusterId(clusterID, '--cluster-id')}.json`);
  }

  /** Records (or replaces) a consumer's key and groups. */
  async trust(clusterID: string, publicKey: KeyObject, groups: readonly string[], now: Date): Promise<TrustRecord> {
    await ensurePrivateDir(this.dir);
    const { record, text } = trustRecordText(clusterID, publicKey, groups, now);
    await writeFileAtomic(this.#file(clusterID), text);
    return record;
  }

  /** Removes a consumer; false when it was not trusted. */
  async untrust(clusterID: string): Promise<boolean> {
    try {
      await unlink(this.#file(clusterID));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        return false;
      }
      throw error;
    }
  }

  /** The consumer's record, or undefined. A corrupt record → ERR_ISSUER_TRUST_RECORD (never "trusted"). */
  async get(clusterID: string): Promise<TrustedConsumer | undefined> {
    if (!isClusterId(clusterID)) {
      return undefined;
    }
    const file = join(this.dir, `${clusterID}.json`);
    let stamp: string;
    try {
      // A synchronous stat: one syscall, cheaper than a thread-pool round trip on the hot path.
      const info = statSync(file, { bigint: true });
      stamp = `${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        this.#cache.delete(clusterID);
        return undefined;
      }
      throw error;
    }
    const cached = this.#cache.get(clusterID);
    if (cached?.stamp === stamp) {
      return cached.consumer;
    }
    const text = await readOptional(file);
    if (text === undefined) {
      return undefined;
    }
    const consumer = parseTrustRecord(text, clusterID, file);
    this.#cache.set(clusterID, { stamp, consumer });
    return consumer;
  }

  async list(): Promise<TrustedConsumer[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        return [];
      }
      throw error;
    }
    const consumers: TrustedConsumer[] = [];
    for (const name of names.filter((n) => n.endsWith('.json') && !n.startsWith('.')).sort()) {
      const consumer = await this.get(name.slice(0, -'.json'.length));
      if (consumer !== undefined) {
        consumers.push(consumer);
      }
    }
    return consumers;
  }
}
