/**
 * A small, fast, non-cryptographic 64-bit hash (two 32-bit lanes) for grouping payloads. Pure.
 * Collisions between different payloads are possible but rare (~1 in 2^64 per pair); it is used
 * to group messages for people to look at, never to decide anything irreversible.
 */

/** Two lanes of a hash. */
export interface Hash2 {
  a: number;
  b: number;
}

const P1 = 0x01000193; // FNV prime
const P2 = 0x5bd1e995; // MurmurHash2 multiplier

/** Hashes a string, seeded by `seed` (type tags keep "1" and 1 apart). */
export function hashString(s: string, seed: number, out: Hash2): Hash2 {
  let a = (0x811c9dc5 ^ seed) >>> 0;
  let b = (0x9747b28c ^ Math.imul(seed, 0x27d4eb2d)) >>> 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, P1);
    b = Math.imul(b ^ c, P2);
    b ^= b >>> 15;
  }
  out.a = fmix(a ^ s.length);
  out.b = fmix(b ^ Math.imul(s.length, 0x9e3779b1));
  return out;
}

/** MurmurHash3 finaliser: spreads every input bit over the output. */
export function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Mixes `x` into an ordered accumulator `h`. */
export function mixOrdered(h: number, x: number): number {
  return fmix(Math.imul(h ^ x, 0x9e3779b1) + 0x7f4a7c15);
}

/** The hash as 16 hex digits. */
export function hashHex(h: Hash2): string {
  return (h.a >>> 0).toString(16).padStart(8, '0') + (h.b >>> 0).toString(16).padStart(8, '0');
}
