import { promisify } from 'node:util';
import { constants as zlibConstants, gunzip, gunzipSync, gzip, gzipSync, type ZlibOptions } from 'node:zlib';
import { compressFrame, compressFrameSync, decompressFrame, decompressFrameSync } from 'lz4-napi';
import { compress as zstdCompress, decompress as zstdDecompress } from '@mongodb-js/zstd';
import { CorruptRecordError } from './errors.js';
import { lz4FrameSize, zstdFrameSize, type FrameSize } from './frame-bounds.js';
import { lz4FramePrefix } from './lz4-prefix.js';
import { compressSnappyXerial, decompressSnappy, snappyPrefix } from './snappy-xerial.js';

/** Kafka's compression codec ids (record batch attributes bits 0-2). */
export const Compression = { None: 0, Gzip: 1, Snappy: 2, Lz4: 3, Zstd: 4 } as const;
export type CompressionCodec = (typeof Compression)[keyof typeof Compression];

/**
 * Default cap on one batch's decompressed size. Fetch limits bound only the compressed bytes, and
 * gzip expands ~1000x, zstd far more: without a cap a few KiB could demand gigabytes.
 */
export const DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024;

export interface DecompressOptions {
  /** Refuse (CorruptRecordError) output larger than this; default DEFAULT_MAX_DECOMPRESSED_BYTES. */
  maxBytes?: number;
}

/*
 * Small payloads are (de)compressed on the event loop: below SYNC_MAX_BYTES, lz4 and snappy take
 * no longer than a thread-pool round trip (docs/performance.md), so the hop only adds latency.
 * Larger ones go to the thread pool, where they run beside the loop instead of stalling it.
 * gzip, much slower, stays on the loop only for a smaller input, GZIP_SYNC_MAX_INPUT.
 * @mongodb-js/zstd 1.2.2 has no synchronous API.
 */
const SYNC_MAX_BYTES = 256 * 1024;
const GZIP_SYNC_MAX_INPUT = 64 * 1024;

const gzipAsync = promisify(gzip);
const gunzipAsync: (data: Buffer, options: ZlibOptions) => Promise<Buffer> = promisify(gunzip);

const CODEC_NAMES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

function unknownCodec(codec: number): CorruptRecordError {
  return new CorruptRecordError(`unknown compression codec ${codec} (Kafka defines 0-4)`);
}

function tooLarge(name: string, size: number, maxBytes: number): CorruptRecordError {
  return new CorruptRecordError(`${name} data decompresses to ${size} bytes, more than the ${maxBytes} allowed`);
}

export async function compress(codec: number, data: Buffer): Promise<Buffer> {
  switch (codec) {
    case Compression.None:
      return data;
    case Compression.Gzip:
      return data.length <= GZIP_SYNC_MAX_INPUT ? gzipSync(data) : gzipAsync(data);
    case Compression.Snappy:
      return compressSnappyXerial(data, data.length <= SYNC_MAX_BYTES);
    case Compression.Lz4:
      // lz4-napi writes one frame of independent blocks without a dictionary: the subset
      // Java's Lz4BlockInputStream reads (it cannot follow linked blocks).
      return data.length <= SYNC_MAX_BYTES ? compressFrameSync(data) : compressFrame(data);
    case Compression.Zstd:
      return zstdCompress(data);
    default:
      throw unknownCodec(codec);
  }
}

/**
 * Decompresses a batch's records. Anything wrong with the input (garbage, truncation, unknown
 * codec, output past maxBytes) is a CorruptRecordError.
 */
export async function decompress(codec: number, data: Buffer, options: DecompressOptions = {}): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES;
  switch (codec) {
    case Compression.None:
      return data;
    case Compression.Gzip:
      return decompressGzip(data, maxBytes);
    case Compression.Snappy:
      return decompressSnappy(data, maxBytes, SYNC_MAX_BYTES);
    case Compression.Lz4: {
      const size = lz4FrameSize(data);
      const run = size.bound <= SYNC_MAX_BYTES ? async (d: Buffer) => decompressFrameSync(d) : decompressFrame;
      return decompressFramed(codec, data, size, maxBytes, run);
    }
    case Compression.Zstd:
      return decompressFramed(codec, data, zstdFrameSize(data), maxBytes, zstdDecompress);
    default:
      throw unknownCodec(codec);
  }
}

/**
 * At least `want` bytes of the decompressed data from its start (all of it when shorter),
 * decompressing little more than that where the codec allows: lz4, snappy and gzip stop early;
 * zstd decompresses whole. For a look at a batch's first record.
 */
export async function decompressPrefix(codec: number, data: Buffer, want: number, options: DecompressOptions = {}): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES;
  switch (codec) {
    case Compression.Lz4:
      lz4FrameSize(data);
      return lz4FramePrefix(data, Math.min(want, maxBytes));
    case Compression.Gzip:
      return gzipPrefix(data, want, maxBytes);
    case Compression.Snappy:
      return snappyPrefix(data, Math.min(want, maxBytes));
    default:
      return decompress(codec, data, options);
  }
}

/** Inflates a growing head of the input, flushed rather than finished, until it yields `want` bytes. */
function gzipPrefix(data: Buffer, want: number, maxBytes: number): Promise<Buffer> | Buffer {
  for (let n = Math.min(data.length, 1024); n < data.length; n = Math.min(data.length, n * 4)) {
    let out: Buffer;
    try {
      out = gunzipSync(data.subarray(0, n), { finishFlush: zlibConstants.Z_SYNC_FLUSH, maxOutputLength: Math.max(1, maxBytes) });
    } catch (err) {
      throw new CorruptRecordError(`corrupt gzip data: ${(err as Error).message}`, { cause: err });
    }
    if (out.length >= want) return out;
  }
  return decompressGzip(data, maxBytes);
}

const isTooLarge = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';

async function decompressGzip(data: Buffer, maxBytes: number): Promise<Buffer> {
  // zlib stops as soon as the output would pass maxOutputLength, so a bomb never inflates.
  // Small inputs first try on the loop with the output capped at SYNC_MAX_BYTES; gzip does not
  // record its size up front, so one that inflates further is redone on the thread pool.
  const syncCap = Math.min(maxBytes, SYNC_MAX_BYTES);
  try {
    if (data.length <= GZIP_SYNC_MAX_INPUT) {
      try {
        return gunzipSync(data, { maxOutputLength: Math.max(1, syncCap) });
      } catch (err) {
        if (!isTooLarge(err) || syncCap === maxBytes) throw err;
      }
    }
    return await gunzipAsync(data, { maxOutputLength: Math.max(1, maxBytes) });
  } catch (err) {
    if (isTooLarge(err)) {
      throw new CorruptRecordError(`gzip data decompresses to more than the ${maxBytes} bytes allowed`, { cause: err });
    }
    throw new CorruptRecordError(`corrupt gzip data: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * lz4 and zstd: their frames may not declare a content size, so the limit is first checked
 * against the block structure. A frame whose blocks could expand past maxBytes plus one block is
 * refused without decompressing (real encoders fill all blocks but the last, so no genuine
 * payload within the limit is refused); the exact size is checked after decompression.
 */
async function decompressFramed(codec: number, data: Buffer, size: FrameSize, maxBytes: number, run: (data: Buffer) => Promise<Buffer>): Promise<Buffer> {
  const name = CODEC_NAMES[codec]!;
  if (size.declared !== undefined && size.declared > maxBytes) throw tooLarge(name, size.declared, maxBytes);
  if (size.bound - size.blockMax > maxBytes) throw tooLarge(name, size.bound - size.blockMax, maxBytes);
  let out: Buffer;
  try {
    out = await run(data);
  } catch (err) {
    throw new CorruptRecordError(`corrupt ${name} data: ${(err as Error).message}`, { cause: err });
  }
  if (out.length > maxBytes) throw tooLarge(name, out.length, maxBytes);
  return out;
}
