import { compress as snappyCompress, compressSync as snappyCompressSync, uncompress as snappyUncompress, uncompressSync as snappyUncompressSync } from 'snappy';
import { CorruptRecordError } from './errors.js';
import { snappyBlockPrefix } from './snappy-prefix.js';

/*
 * Kafka's codec 2 comes in two shapes on the wire:
 * - Java's producer (the reference) writes snappy-java's SnappyOutputStream format, "Xerial":
 *   the 8-byte magic 0x82 "SNAPPY" 0x00, a big-endian version and minimum compatible version (1, 1),
 *   then blocks of [int32 big-endian length, one raw snappy block of at most 32 KiB input];
 * - librdkafka (rd_kafka_snappy_compress_iov), franz-go releases (s2.EncodeSnappy) and
 *   kafkajs-snappy write a single raw snappy block instead.
 * Readers (snappy-java's SnappyInputStream, librdkafka, franz-go, kafkajs-snappy) look for the
 * Xerial magic and otherwise treat the data as raw, so we read both. We write Xerial, as Java does:
 * it is the form every reader is built to accept first, while raw input depends on each reader's
 * fallback path; the 32 KiB blocks also bound each native call and each reader's buffers.
 */

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER = Buffer.concat([XERIAL_MAGIC, Buffer.from([0, 0, 0, 1, 0, 0, 0, 1])]);
/** snappy-java's default block size, which the Java producer uses. */
const XERIAL_BLOCK_SIZE = 32 * 1024;

function corrupt(why: string, cause?: unknown): CorruptRecordError {
  return new CorruptRecordError(`corrupt snappy data: ${why}`, cause === undefined ? undefined : { cause });
}

function tooLarge(size: number, maxBytes: number): CorruptRecordError {
  return new CorruptRecordError(`snappy data decompresses to ${size} bytes, more than the ${maxBytes} allowed`);
}

function isXerial(data: Buffer): boolean {
  return data.length >= XERIAL_HEADER.length && XERIAL_MAGIC.equals(data.subarray(0, XERIAL_MAGIC.length));
}

/** A raw snappy block starts with its uncompressed length as a little-endian base-128 varint. */
function rawLength(data: Buffer, start: number, end: number): number {
  let value = 0;
  for (let i = 0, pos = start; i < 5; i++, pos++) {
    if (pos >= end) throw corrupt('truncated length preamble');
    const b = data[pos]!;
    value += (b & 0x7f) * 2 ** (7 * i);
    if (b < 0x80) {
      if (value > 0xffffffff) throw corrupt('length preamble over 32 bits');
      return value;
    }
  }
  throw corrupt('length preamble longer than 5 bytes');
}

async function uncompressBlock(block: Buffer, expected: number, sync: boolean): Promise<Buffer> {
  let out: Buffer;
  try {
    const options = { asBuffer: true };
    out = (sync ? snappyUncompressSync(block, options) : await snappyUncompress(block, options)) as Buffer;
  } catch (err) {
    throw corrupt((err as Error).message, err);
  }
  if (out.length !== expected) throw corrupt(`block decompressed to ${out.length} bytes, not ${expected}`);
  return out;
}

/** Snappy in Xerial framing, as Java's producer writes it; `sync` runs it on the event loop. */
export async function compressSnappyXerial(data: Buffer, sync: boolean): Promise<Buffer> {
  const blocks: (Buffer | Promise<Buffer>)[] = [];
  for (let at = 0; at < data.length; at += XERIAL_BLOCK_SIZE) {
    const block = data.subarray(at, Math.min(at + XERIAL_BLOCK_SIZE, data.length));
    blocks.push(sync ? snappyCompressSync(block) : snappyCompress(block));
  }
  const compressed = await Promise.all(blocks);
  let size = XERIAL_HEADER.length;
  for (const block of compressed) size += 4 + block.length;
  const out = Buffer.allocUnsafe(size);
  let pos = XERIAL_HEADER.copy(out, 0);
  for (const block of compressed) {
    pos = out.writeInt32BE(block.length, pos);
    pos += block.copy(out, pos);
  }
  return out;
}

/**
 * Decompresses Xerial-framed or raw snappy, refusing output larger than maxBytes up front. Output
 * of at most syncMaxBytes is decompressed on the event loop.
 */
export async function decompressSnappy(data: Buffer, maxBytes: number, syncMaxBytes: number): Promise<Buffer> {
  if (!isXerial(data)) {
    const length = rawLength(data, 0, data.length);
    if (length > maxBytes) throw tooLarge(length, maxBytes);
    return uncompressBlock(data, length, length <= syncMaxBytes);
  }
  // Walk the block table first: it validates the framing and sums the declared sizes, so the
  // limit is checked and the output allocated once before any block is decompressed.
  const blocks: Buffer[] = [];
  const lengths: number[] = [];
  let total = 0;
  for (let pos = XERIAL_HEADER.length; pos < data.length;) {
    if (pos + 4 > data.length) throw corrupt('truncated Xerial block length');
    const size = data.readInt32BE(pos);
    pos += 4;
    if (size <= 0 || pos + size > data.length) throw corrupt(`bad Xerial block length ${size}`);
    const length = rawLength(data, pos, pos + size);
    total += length;
    if (total > maxBytes) throw tooLarge(total, maxBytes);
    blocks.push(data.subarray(pos, pos + size));
    lengths.push(length);
    pos += size;
  }
  const sync = total <= syncMaxBytes;
  const parts = await Promise.all(blocks.map((block, i) => uncompressBlock(block, lengths[i]!, sync)));
  if (parts.length === 1) return parts[0]!;
  const out = Buffer.allocUnsafe(total);
  let pos = 0;
  for (const part of parts) pos += part.copy(out, pos);
  return out;
}

/**
 * At least `want` bytes of the content from its start (all of it when shorter), decoding only
 * the blocks, and the part of the last one, that hold them (snappy-prefix.ts).
 */
export function snappyPrefix(data: Buffer, want: number): Buffer {
  const out = Buffer.allocUnsafe(Math.max(0, want));
  if (!isXerial(data)) return out.subarray(0, snappyBlockPrefix(data, 0, data.length, out, 0));
  let length = 0;
  for (let pos = XERIAL_HEADER.length; pos < data.length && length < want;) {
    if (pos + 4 > data.length) throw corrupt('truncated Xerial block length');
    const size = data.readInt32BE(pos);
    pos += 4;
    if (size <= 0 || pos + size > data.length) throw corrupt(`bad Xerial block length ${size}`);
    length = snappyBlockPrefix(data, pos, pos + size, out, length);
    pos += size;
  }
  return out.subarray(0, length);
}
