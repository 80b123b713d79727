/**
 * The first bytes of one raw snappy block, decoded in JavaScript without decoding the rest: the
 * native binding decodes whole blocks only (see lz4-prefix.ts for why a prefix is wanted).
 */
import { CorruptRecordError } from './errors.js';

function corrupt(why: string): CorruptRecordError {
  return new CorruptRecordError(`corrupt snappy data: ${why}`);
}

/** Decodes the block in src[start, end) into out from `length` on, until out is full or the block ends. */
export function snappyBlockPrefix(src: Buffer, start: number, end: number, out: Buffer, length: number): number {
  const cap = out.length;
  const origin = length;
  let pos = start;
  // The preamble: the block's uncompressed length, which a prefix does not need.
  while (pos < end && src[pos]! >= 0x80) pos++;
  if (++pos > end) throw corrupt('truncated length preamble');
  while (pos < end && length < cap) {
    const tag = src[pos++]!;
    const type = tag & 0x03;
    if (type === 0) {
      let literal = tag >>> 2;
      if (literal >= 60) {
        const bytes = literal - 59;
        if (pos + bytes > end) throw corrupt('truncated literal length');
        literal = src.readUIntLE(pos, bytes);
        pos += bytes;
      }
      literal += 1;
      if (pos + literal > end) throw corrupt('literal past the block');
      length += src.copy(out, length, pos, pos + Math.min(literal, cap - length));
      pos += literal;
      continue;
    }
    let copy: number;
    let offset: number;
    if (type === 1) {
      if (pos + 1 > end) throw corrupt('truncated copy');
      copy = 4 + ((tag >>> 2) & 0x07);
      offset = ((tag >>> 5) << 8) | src[pos++]!;
    } else {
      const bytes = type === 2 ? 2 : 4;
      if (pos + bytes > end) throw corrupt('truncated copy');
      copy = 1 + (tag >>> 2);
      offset = src.readUIntLE(pos, bytes);
      pos += bytes;
    }
    if (offset === 0 || offset > length - origin) throw corrupt(`copy offset ${offset} before the block's start`);
    // Byte by byte: a copy may overlap the bytes it is producing.
    const stop = Math.min(length + copy, cap);
    for (let from = length - offset; length < stop;) out[length++] = out[from++]!;
  }
  return length;
}
