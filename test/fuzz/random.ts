/**
 * The fuzz tests' one source of randomness: a small seeded generator (sfc32, seeded through splitmix32), so a seed
 * printed by a failure replays the same cases anywhere. Never Math.random in a fuzz target.
 */
export class Random {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    let state = seed >>> 0;
    const next = (): number => {
      state = (state + 0x9e3779b9) >>> 0;
      let z = state;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = next();
    this.#b = next();
    this.#c = next();
    this.#d = next();
    for (let round = 0; round < 12; round += 1) this.uint32();
  }

  /** The next 32 random bits. */
  uint32(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return t >>> 0;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor((this.uint32() / 0x1_0000_0000) * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.uint32() / 0x1_0000_0000 < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }

  bytes(length: number): Buffer {
    const out = Buffer.alloc(length);
    for (let index = 0; index < length; index += 1) out[index] = this.int(0, 255);
    return out;
  }
}

/** The seed of case `index` of a run seeded `seed`: one case replays alone from the pair. */
export function caseSeed(seed: number, index: number): number {
  return (Math.imul(seed ^ 0x5bd1e995, 0x27d4eb2d) + Math.imul(index + 1, 0x165667b1)) >>> 0;
}

/** Byte-level mutations shared by the targets: flip, insert, delete, duplicate a span, truncate. */
export function mutateBytes(random: Random, input: Buffer, rounds = random.int(1, 3)): Buffer {
  let bytes = Buffer.from(input);
  for (let round = 0; round < rounds && bytes.length > 0; round += 1) {
    const at = random.int(0, bytes.length - 1);
    switch (random.int(0, 4)) {
      case 0:
        bytes[at] = random.chance(0.5) ? bytes[at]! ^ (1 << random.int(0, 7)) : random.int(0, 255);
        break;
      case 1:
        bytes = Buffer.concat([bytes.subarray(0, at), random.bytes(random.int(1, 4)), bytes.subarray(at)]);
        break;
      case 2:
        bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + random.int(1, 4))]);
        break;
      case 3: {
        const end = Math.min(bytes.length, at + random.int(1, 16));
        bytes = Buffer.concat([bytes.subarray(0, end), bytes.subarray(at, end), bytes.subarray(end)]);
        break;
      }
      default:
        bytes = bytes.subarray(0, at);
    }
  }
  return bytes;
}
