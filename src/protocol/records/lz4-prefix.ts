/**
 * The first bytes of an LZ4 frame's content, decoded in JavaScript without decoding the rest.
 * lz4-napi decodes whole frames only; a reader that needs one record of a batch (is this batch
 * kcompact's own?) would otherwise decompress every record of it to look at the first.
 */
import { CorruptRecordError } from './errors.js';

const LZ4_MAGIC = 0x184d2204;
const MIN_MATCH = 4;

function corrupt(why: string): CorruptRecordError {
  return new CorruptRecordError(`corrupt lz4 data: ${why}`);
}

/**
 * At least `want` bytes of the frame's content (all of it when shorter), from its start. The
 * output is one contiguous buffer, so matches into earlier blocks (linked blocks, as librdkafka
 * writes them) resolve as they do in a whole decode.
 */
export function lz4FramePrefix(data: Buffer, want: number): Buffer {
  if (data.length < 7 || data.readUInt32LE(0) !== LZ4_MAGIC) throw corrupt('bad frame header');
  const flg = data[4]!;
  if (flg >> 6 !== 1) throw corrupt(`unsupported frame version ${flg >> 6}`);
  if (flg & 0x01) throw corrupt('preset dictionaries are not supported');
  const blockChecksum = (flg & 0x10) !== 0;
  let pos = 6 + ((flg & 0x08) !== 0 ? 8 : 0) + 1;
  const out = Buffer.allocUnsafe(Math.max(0, want));
  let length = 0;
  while (length < want) {
    if (pos + 4 > data.length) throw corrupt('truncated before the end mark');
    const word = data.readUInt32LE(pos);
    pos += 4;
    if (word === 0) break;
    const size = word & 0x7fffffff;
    const end = pos + size;
    if (end > data.length) throw corrupt('truncated block');
    if (word >>> 31 === 1) length += data.copy(out, length, pos, Math.min(end, pos + want - length));
    else length = decodeBlock(data, pos, end, out, length);
    pos = end + (blockChecksum ? 4 : 0);
  }
  return out.subarray(0, length);
}

/** Decodes one block's sequences into out from `length` on, stopping once out is full. */
function decodeBlock(src: Buffer, pos: number, end: number, out: Buffer, length: number): number {
  const cap = out.length;
  while (pos < end) {
    const token = src[pos++]!;
    let literals = token >>> 4;
    if (literals === 15) {
      let b: number;
      do {
        if (pos >= end) throw corrupt('truncated literal length');
        b = src[pos++]!;
        literals += b;
      } while (b === 255);
    }
    if (pos + literals > end) throw corrupt('literals past the block');
    const n = Math.min(literals, cap - length);
    src.copy(out, length, pos, pos + n);
    length += n;
    pos += literals;
    if (length >= cap || pos >= end) return length;
    if (pos + 2 > end) throw corrupt('truncated match offset');
    const offset = src[pos]! | (src[pos + 1]! << 8);
    pos += 2;
    if (offset === 0 || offset > length) throw corrupt(`match offset ${offset} before the content's start`);
    let matchLength = (token & 0x0f) + MIN_MATCH;
    if ((token & 0x0f) === 15) {
      let b: number;
      do {
        if (pos >= end) throw corrupt('truncated match length');
        b = src[pos++]!;
        matchLength += b;
      } while (b === 255);
    }
    // Byte by byte: a match may overlap the bytes it is producing (offset < length).
    const stop = Math.min(length + matchLength, cap);
    for (let from = length - offset; length < stop;) out[length++] = out[from++]!;
    if (length >= cap) return length;
  }
  return length;
}
