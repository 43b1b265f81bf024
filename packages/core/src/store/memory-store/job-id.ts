import { randomFillSync } from 'node:crypto';

/** Random bytes for 256 ids at a time (one `randomFillSync`, as `randomUUID` does with its own cache). */
const pool = Buffer.alloc(16 * 256);
let used = pool.length;
/** The id being written, as ASCII. */
const out = Buffer.alloc(36);
const HEX = Buffer.from('0123456789abcdef', 'latin1');

/**
 * A random (version 4) UUID, like `crypto.randomUUID()`, but one flat string. Node builds a
 * `randomUUID` by concatenating its parts, so each is a tree of about 14 string pieces; a
 * MemoryStore keeps every id as long as it keeps the job (a hundred thousand completed jobs kept
 * 45 MB of such pieces, which every full garbage collection walked). Written into a buffer and
 * decoded once, the id is one string of 36 bytes.
 */
export function newJobId(): string {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  let o = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out[o++] = 0x2d; // '-'
    let byte = pool[used + i]!;
    if (i === 6)
      byte = (byte & 0x0f) | 0x40; // version 4
    else if (i === 8) byte = (byte & 0x3f) | 0x80; // variant 10xx
    out[o++] = HEX[byte >> 4]!;
    out[o++] = HEX[byte & 0x0f]!;
  }
  used += 16;
  return out.toString('latin1');
}
