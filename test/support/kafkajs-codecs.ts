/**
 * Snappy, LZ4 and zstd codecs for kafkajs, which ships only gzip. Real kafkajs users plug in
 * kafkajs-snappy, kafkajs-lz4 and a zstd codec; these behave the same on the wire, built on the
 * native packages the project already has, and independent of the proxy's own compression code
 * so the test client cannot share its bugs.
 */
// kafkajs is CommonJS: Node's ESM loader sees only its default export as a value.
import kafkajs, { type CompressionTypes } from 'kafkajs';
import { compressFrame, decompressFrame } from 'lz4-napi';
import { compress as snappyCompress, uncompress as snappyUncompress } from 'snappy';
import { compress as zstdCompress, decompress as zstdDecompress } from '@mongodb-js/zstd';

interface Encoder {
  buffer: Buffer;
}

/** snappy-java's stream header (magic, version 1, compatible version 1), which the Java producer writes. */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;

async function snappyRaw(data: Buffer): Promise<Buffer> {
  return (await snappyUncompress(data, { asBuffer: true })) as Buffer;
}

/** Reads Java's Xerial framing (length-prefixed raw blocks after the header) as well as raw snappy. */
async function snappyDecompress(data: Buffer): Promise<Buffer> {
  if (data.length < XERIAL_HEADER_BYTES || !data.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)) return snappyRaw(data);
  const blocks: Buffer[] = [];
  for (let pos = XERIAL_HEADER_BYTES; pos < data.length;) {
    const len = data.readInt32BE(pos);
    blocks.push(await snappyRaw(data.subarray(pos + 4, pos + 4 + len)));
    pos += 4 + len;
  }
  return Buffer.concat(blocks);
}

const codecs = {
  [kafkajs.CompressionTypes.Snappy]: {
    // One raw block, as kafkajs-snappy and librdkafka write; every reader accepts it.
    compress: (e: Encoder) => snappyCompress(e.buffer),
    decompress: snappyDecompress,
  },
  [kafkajs.CompressionTypes.LZ4]: {
    compress: (e: Encoder) => compressFrame(e.buffer),
    decompress: (b: Buffer) => decompressFrame(b),
  },
  [kafkajs.CompressionTypes.ZSTD]: {
    compress: (e: Encoder) => zstdCompress(e.buffer),
    decompress: (b: Buffer) => zstdDecompress(b),
  },
};

export function registerKafkajsCodecs(): void {
  const registry = kafkajs.CompressionCodecs as Record<CompressionTypes, () => unknown>;
  for (const [type, codec] of Object.entries(codecs)) registry[Number(type) as CompressionTypes] = () => codec;
}
