import { appendFile, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NonceStore } from '../../src/issuer/state/data-dir/nonce-journal.js';
import { frozenClock } from '../helpers/issuer-fixtures.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-nonces-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('nonce journal', () => {
  it('a restart keeps outstanding and spent nonces; expired ones are compacted away', async () => {
    const clock = frozenClock();
    const file = join(dir, 'nonces.journal');
    let store = await NonceStore.open(file, clock.now());
    const a = await store.issue('c1', 60_000, clock.now());
    const b = await store.issue('c1', 60_000, clock.now());
    const old = await store.issue('c2', 1_000, clock.now());
    const spent = store.consume(a.nonce);
    expect(spent.first).toBe(true);
    await spent.durable;
    expect(store.consume(a.nonce).first).toBe(false);
    await store.close();
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    clock.advance(2_000);
    store = await NonceStore.open(file, clock.now());
    expect(store.get(a.nonce)).toMatchObject({ consumer: 'c1', consumed: true });
    expect(store.get(b.nonce)).toMatchObject({ consumer: 'c1', consumed: false });
    expect(store.get(old.nonce)).toBeUndefined();
    expect(await readFile(file, 'utf8')).not.toContain(old.nonce);
    await store.close();
  });

  it('a torn last line (crash mid-append) is ignored, the rest survives', async () => {
    const clock = frozenClock();
    const file = join(dir, 'nonces.journal');
    let store = await NonceStore.open(file, clock.now());
    const a = await store.issue('c1', 60_000, clock.now(), true);
    await store.close();
    await appendFile(file, `{"op":"consume","nonce":"${a.nonce.slice(0, 20)}`);
    store = await NonceStore.open(file, clock.now());
    expect(store.get(a.nonce)).toMatchObject({ consumed: false });
    await store.close();
  });

  it('concurrent appends share a write and resolve after it', async () => {
    const clock = frozenClock();
    const store = await NonceStore.open(join(dir, 'j'), clock.now(), { maxPerConsumer: 1000 });
    const issued = await Promise.all(Array.from({ length: 200 }, () => store.issue('c1', 60_000, clock.now())));
    expect(new Set(issued.map((n) => n.nonce)).size).toBe(200);
    await Promise.all(issued.map((n) => store.consume(n.nonce).durable));
    await store.close();
    const again = await NonceStore.open(join(dir, 'j'), clock.now());
    expect(issued.every((n) => again.get(n.nonce)?.consumed === true)).toBe(true);
    await again.close();
  });

  it('a consumer keeps at most maxPerConsumer outstanding nonces (the oldest retire)', async () => {
    const clock = frozenClock();
    const store = await NonceStore.open(join(dir, 'j'), clock.now(), { maxPerConsumer: 2 });
    const [n1, n2, n3] = [
      await store.issue('c1', 60_000, clock.now()),
      await store.issue('c1', 60_000, clock.now()),
      await store.issue('c1', 60_000, clock.now()),
    ];
    expect(store.get(n1!.nonce)?.consumed).toBe(true);
    expect(store.outstanding('c1', clock.now())).toEqual([n2!.nonce, n3!.nonce]);
    await store.close();
  });
});

describe('nonce journal: damaged lines', () => {
  it('a line that is JSON but not an entry (null, a number, a list) is skipped like a torn one; the issuer still starts', async () => {
    const clock = frozenClock();
    const file = join(dir, 'nonces.journal');
    let store = await NonceStore.open(file, clock.now());
    const kept = await store.issue('c1', 60_000, clock.now());
    await store.close();
    await appendFile(file, 'null\n7\n[1]\n"x"\n');
    store = await NonceStore.open(file, clock.now());
    expect(store.get(kept.nonce)).toMatchObject({ consumer: 'c1', consumed: false });
    await store.close();
  });
});
