import { CorruptRecordError } from './errors.js';

/**
 * What a compressed payload's own framing says about its decompressed size, read without
 * decompressing anything, so a decompression bomb is refused before any output is allocated.
 */
export interface FrameSize {
  /**
   * Upper bound of the decompressed size: exact for stored and RLE blocks, one full block for each
   * compressed block.
   */
  readonly bound: number;
  /** The largest block the frames allow: real encoders fill every block but the last. */
  readonly blockMax: number;
  /** Total content size when every frame declares one (decoders verify it). */
  readonly declared: number | undefined;
}

const LZ4_MAGIC = 0x184d2204;
const ZSTD_MAGIC = 0xfd2fb528;
const ZSTD_BLOCK_MAX = 128 * 1024;

function corrupt(codec: string, why: string): CorruptRecordError {
  return new CorruptRecordError(`corrupt ${codec} data: ${why}`);
}

/** Little-endian unsigned integer of 1 to 8 bytes (precise up to 2^53, enough to compare). */
function readUintLE(data: Buffer, pos: number, bytes: number): number {
  let value = 0;
  for (let i = bytes - 1; i >= 0; i--) value = value * 256 + data[pos + i]!;
  return value;
}

/**
 * Walks one LZ4 frame (the format Kafka uses for codec 3). Exactly one frame and nothing after
 * it: Java's reader stops at the first frame's end mark and lz4-napi silently ignores what
 * follows, so trailing bytes would be records some readers see and others do not.
 */
export function lz4FrameSize(data: Buffer): FrameSize {
  const fail = (why: string) => corrupt('lz4', why);
  if (data.length < 7) throw fail('shorter than a frame header');
  if (data.readUInt32LE(0) !== LZ4_MAGIC) throw fail('bad frame magic');
  const flg = data[4]!;
  const bd = data[5]!;
  if (flg >> 6 !== 1) throw fail(`unsupported frame version ${flg >> 6}`);
  if (flg & 0x02) throw fail('reserved FLG bit set');
  // A dictionary id means the frame needs a dictionary nobody in Kafka shares; Java rejects it.
  if (flg & 0x01) throw fail('preset dictionaries are not supported');
  const blockId = (bd >> 4) & 0x07;
  if (bd & 0x8f || blockId < 4) throw fail(`bad block descriptor 0x${bd.toString(16)}`);
  const blockMax = 1 << (2 * blockId + 8);
  const blockChecksum = (flg & 0x10) !== 0;
  const hasContentSize = (flg & 0x08) !== 0;
  const contentChecksum = (flg & 0x04) !== 0;
  let pos = 6;
  let declared: number | undefined;
  if (hasContentSize) {
    if (data.length < pos + 9) throw fail('truncated frame header');
    declared = readUintLE(data, pos, 8);
    pos += 8;
  }
  pos += 1; // header checksum, verified by the decoder
  let bound = 0;
  for (;;) {
    if (pos + 4 > data.length) throw fail('truncated before the end mark');
    const word = data.readUInt32LE(pos);
    pos += 4;
    if (word === 0) break;
    const stored = word >>> 31 === 1;
    const size = word & 0x7fffffff;
    if (size > blockMax) throw fail(`block of ${size} bytes exceeds the frame's ${blockMax}`);
    pos += size + (blockChecksum ? 4 : 0);
    if (pos > data.length) throw fail('truncated block');
    bound += stored ? size : blockMax;
  }
  if (contentChecksum) pos += 4;
  if (pos > data.length) throw fail('truncated content checksum');
  if (pos !== data.length) throw fail(`${data.length - pos} bytes after the frame`);
  return { bound, blockMax, declared };
}

/** Walks the Zstandard frames (several may be concatenated, skippable frames included). */
export function zstdFrameSize(data: Buffer): FrameSize {
  const fail = (why: string) => corrupt('zstd', why);
  if (data.length === 0) throw fail('empty input');
  let pos = 0;
  let bound = 0;
  let declared: number | undefined = 0;
  while (pos < data.length) {
    if (pos + 4 > data.length) throw fail('truncated frame magic');
    const magic = data.readUInt32LE(pos);
    pos += 4;
    if (magic >>> 4 === 0x184d2a5) {
      if (pos + 4 > data.length) throw fail('truncated skippable frame');
      pos += 4 + data.readUInt32LE(pos);
      if (pos > data.length) throw fail('truncated skippable frame');
      continue;
    }
    if (magic !== ZSTD_MAGIC) throw fail('bad frame magic');
    if (pos >= data.length) throw fail('truncated frame header');
    const fhd = data[pos++]!;
    if (fhd & 0x08) throw fail('reserved frame header bit set');
    const fcsFlag = fhd >> 6;
    const singleSegment = (fhd & 0x20) !== 0;
    const contentChecksum = (fhd & 0x04) !== 0;
    const dictIdBytes = [0, 1, 2, 4][fhd & 0x03]!;
    const fcsBytes = [singleSegment ? 1 : 0, 2, 4, 8][fcsFlag]!;
    let windowSize = Infinity;
    if (!singleSegment) {
      if (pos >= data.length) throw fail('truncated frame header');
      const wd = data[pos++]!;
      const base = 2 ** (10 + (wd >> 3));
      windowSize = base + (base / 8) * (wd & 0x07);
    }
    pos += dictIdBytes;
    if (pos + fcsBytes > data.length) throw fail('truncated frame header');
    let contentSize: number | undefined;
    if (fcsBytes > 0) {
      contentSize = readUintLE(data, pos, fcsBytes) + (fcsBytes === 2 ? 256 : 0);
      if (singleSegment) windowSize = contentSize;
    }
    pos += fcsBytes;
    declared = contentSize === undefined || declared === undefined ? undefined : declared + contentSize;
    const blockMax = Math.min(windowSize, ZSTD_BLOCK_MAX);
    for (let last = false; !last;) {
      if (pos + 3 > data.length) throw fail('truncated block header');
      const header = data[pos]! | (data[pos + 1]! << 8) | (data[pos + 2]! << 16);
      pos += 3;
      last = (header & 1) === 1;
      const type = (header >> 1) & 0x03;
      const size = header >>> 3;
      if (type === 3) throw fail('reserved block type');
      if (size > blockMax) throw fail(`block of ${size} bytes exceeds the frame's ${blockMax}`);
      // RLE blocks store one byte repeated `size` times; compressed blocks may expand to blockMax.
      pos += type === 1 ? 1 : size;
      bound += type === 2 ? blockMax : size;
      if (pos > data.length) throw fail('truncated block');
    }
    if (contentChecksum) pos += 4;
    if (pos > data.length) throw fail('truncated content checksum');
  }
  return { bound, blockMax: ZSTD_BLOCK_MAX, declared };
}
