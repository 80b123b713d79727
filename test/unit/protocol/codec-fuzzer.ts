/**
 * The codec fuzzer: mutated and random frames through every decoder that reads untrusted bytes
 * (request and response headers and bodies, record batch walking, decompression, record decoding,
 * key scanning, batch rebuilding, the produce guard's key check). Shared by `make fuzz`
 * (bench/fuzz-codec.ts, a million frames or more) and a small round in the unit suite.
 *
 * A finding is any of:
 * - a throw that is not the codec's own ProtocolError or CorruptRecordError, or one of those
 *   wrapping a TypeError, ReferenceError, SyntaxError or a non-Error (a programming error the
 *   wrapper hid). A wrapped RangeError from a Buffer read is tolerated: the codec did catch it.
 * - a decoder call that takes longer than hangMs, when one is given (`make fuzz`; the unit round
 *   judges no duration: a decoder stuck in a loop never ends it, and the runner's timeout fails it);
 * - resident memory past maxRssBytes (sampled every few hundred frames);
 * - a broken invariant on success (record counts, a rebuilt batch that does not read back).
 *
 * Every frame draws from its own generator, seeded by (seed, frame index): `--seed S --start N
 * --frames 1` replays frame N alone.
 */
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { checkKeys } from '../../../src/compaction/produce-guard/keyless-records.js';
import { ProtocolError } from '../../../src/protocol/errors.js';
import { APIS } from '../../../src/protocol/generated/messages.js';
import { decodeRequestHeader, decodeResponseHeader, responseHeaderVersion } from '../../../src/protocol/headers.js';
import {
  ApiKey,
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeRequestFrame,
  encodeResponse,
  encodeResponseFrame,
  type Struct,
} from '../../../src/protocol/messages.js';
import { writeBatchHeader } from '../../../src/protocol/records/batch-header.js';
import {
  batchPayload,
  CorruptRecordError,
  decodeControlRecord,
  encodeBatch,
  iterateBatches,
  parseRecords,
  readBatchHeader,
  rebuildBatch,
  scanRecordKeys,
  verifyCrc,
  type BatchFields,
  type RecordInput,
} from '../../../src/protocol/records/batch.js';
import { Compression, DEFAULT_MAX_DECOMPRESSED_BYTES } from '../../../src/protocol/records/compression.js';
import { sampleStruct, seededRng, type Rng } from './sample-body.js';

export interface FuzzOptions {
  seed: number;
  frames: number;
  /** Index of the first frame (to replay one frame of a longer run). */
  start?: number;
  /** A single decoder call slower than this is a hang; none (the default): no call is timed out. */
  hangMs?: number;
  maxRssBytes?: number;
  /** Share of frames built around a decompression bomb (they cost real CPU). */
  bombRate?: number;
  onProgress?: (done: number) => void;
}

export interface DecoderStats {
  calls: number;
  ok: number;
  /** Rejections by error name, a wrapped cause as `ProtocolError<RangeError>`. */
  errors: Record<string, number>;
  maxMs: number;
}

export interface Finding {
  frame: number;
  decoder: string;
  kind: 'exception' | 'hang' | 'memory' | 'invariant';
  detail: string;
  /** What was decoded, e.g. `request` or `response Fetch v16` or `records (Produce v9)`. */
  target: string;
  hex: string;
}

export interface FuzzReport {
  seed: number;
  frames: number;
  byFrameKind: Record<string, number>;
  byDecoder: Record<string, DecoderStats>;
  peakRssBytes: number;
  peakHeapUsedBytes: number;
  peakExternalBytes: number;
  elapsedMs: number;
  findings: Finding[];
}

type Direction = 'request' | 'response';

interface SeedFrame {
  apiKey: number;
  version: number;
  direction: Direction;
  /** With its size prefix and header. */
  frame: Buffer;
}

interface Version {
  apiKey: number;
  version: number;
}

const FIELDS: BatchFields = {
  baseOffset: 1000n,
  partitionLeaderEpoch: 3,
  attributes: 0,
  lastOffsetDelta: 0,
  baseTimestamp: 1_700_000_000_000n,
  maxTimestamp: 1_700_000_009_000n,
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
};

const MAX_FINDINGS = 20;

function int(rnd: Rng, n: number): number {
  return Math.floor(rnd() * n);
}

function randomBytes(rnd: Rng, n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = int(rnd, 256);
  return b;
}

function sampleRecords(rnd: Rng, count: number): RecordInput[] {
  return Array.from({ length: count }, (_, i) => ({
    timestampDelta: i * 1000,
    offsetDelta: i,
    key: rnd() < 0.2 ? null : Buffer.from(`key-${i}-${int(rnd, 100)}`),
    value: rnd() < 0.15 ? null : Buffer.from(`{"n":${i},"v":"${'x'.repeat(int(rnd, 40))}"}`),
    headers: rnd() < 0.3 ? [{ key: Buffer.from('h'), value: rnd() < 0.5 ? null : Buffer.from([i]) }] : [],
  }));
}

/** A batch whose compressed body is given as is (for bombs no encoder would write). */
function rawBatch(codec: number, body: Buffer, count: number): Buffer {
  const out = Buffer.alloc(61 + body.length);
  body.copy(out, 61);
  writeBatchHeader(out, 0, { ...FIELDS, attributes: codec, lastOffsetDelta: count - 1 }, count, out.length);
  return out;
}

/** zstd RLE blocks of 128 KiB, 4 bytes each: past DEFAULT_MAX_DECOMPRESSED_BYTES from ~8 KiB. */
export function zstdBomb(): Buffer {
  const blocks = Math.ceil(DEFAULT_MAX_DECOMPRESSED_BYTES / (128 * 1024)) + 4;
  const frame = Buffer.alloc(6 + blocks * 4);
  frame.writeUInt32LE(0xfd2fb528, 0);
  frame[5] = 7 << 3;
  for (let i = 0; i < blocks; i++) {
    frame.writeUIntLE(((128 * 1024) << 3) | (1 << 1) | (i === blocks - 1 ? 1 : 0), 6 + i * 4, 3);
    frame[6 + i * 4 + 3] = 0x61;
  }
  return rawBatch(Compression.Zstd, frame, 1000);
}

/** Concatenated gzip members of 1 MiB of zeros each, inflating past the default cap. */
export function gzipBomb(): Buffer {
  const member = gzipSync(Buffer.alloc(1024 * 1024));
  const members = DEFAULT_MAX_DECOMPRESSED_BYTES / (1024 * 1024) + 8;
  return rawBatch(Compression.Gzip, Buffer.concat(Array.from({ length: members }, () => member)), 1000);
}

/** An lz4 frame of 4 MiB blocks, one byte each on the wire: its block bound passes the cap. */
export function lz4Bomb(): Buffer {
  const blocks = DEFAULT_MAX_DECOMPRESSED_BYTES / (4 * 1024 * 1024) + 4;
  const frame = Buffer.alloc(7 + blocks * 5 + 4);
  frame.writeUInt32LE(0x184d2204, 0);
  frame[4] = 0x60; // version 1, independent blocks
  frame[5] = 0x70; // 4 MiB blocks
  for (let i = 0; i < blocks; i++) frame.writeUInt32LE(1, 7 + i * 5);
  return rawBatch(Compression.Lz4, frame, 1000);
}

/** Raw snappy whose preamble claims 4 GiB. */
export function snappyBomb(): Buffer {
  return rawBatch(Compression.Snappy, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x61]), 1000);
}

async function buildBatches(rnd: Rng): Promise<{ blobs: Buffer[]; bombs: Buffer[] }> {
  const blobs: Buffer[] = [];
  for (const codec of [0, 1, 2, 3, 4]) {
    for (const count of [1, 3, 12]) {
      const records = sampleRecords(rnd, count);
      blobs.push(await encodeBatch({ ...FIELDS, lastOffsetDelta: count - 1 }, records, codec));
    }
    const txn = sampleRecords(rnd, 5);
    blobs.push(await encodeBatch({ ...FIELDS, attributes: 0x10, lastOffsetDelta: 4, producerId: 42n, producerEpoch: 1, baseSequence: 0 }, txn, codec));
  }
  const marker = { timestampDelta: 0, offsetDelta: 0, key: Buffer.from('00000001', 'hex'), value: Buffer.from('000000000005', 'hex') };
  blobs.push(await encodeBatch({ ...FIELDS, attributes: 0x30, producerId: 42n, producerEpoch: 1 }, [marker], 0));
  blobs.push(await encodeBatch(FIELDS, [], 0));
  // Fetch blobs: several batches, and one cut at a byte limit.
  const joined = Buffer.concat([blobs[0]!, blobs[5]!, blobs[14]!]);
  blobs.push(joined, joined.subarray(0, joined.length - 7));
  return { blobs, bombs: [zstdBomb(), gzipBomb(), snappyBomb(), lz4Bomb()] };
}

/** Replaces every `records` field with a real batch blob so mutations reach the batch decoders. */
function plantRecords(value: unknown, rnd: Rng, blobs: readonly Buffer[]): void {
  if (Array.isArray(value)) {
    for (const v of value) plantRecords(v, rnd, blobs);
  } else if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) {
    const struct = value as Struct;
    for (const [k, v] of Object.entries(struct)) {
      if (k === 'records' && Buffer.isBuffer(v)) struct[k] = blobs[int(rnd, blobs.length)]!;
      else plantRecords(v, rnd, blobs);
    }
  }
}

function buildFrames(rnd: Rng, blobs: readonly Buffer[]): { frames: SeedFrame[]; versions: Version[] } {
  const frames: SeedFrame[] = [];
  const versions: Version[] = [];
  for (const api of APIS) {
    if (!api?.validVersions) continue;
    for (let version = api.validVersions[0]; version <= api.validVersions[1]; version++) {
      versions.push({ apiKey: api.apiKey, version });
      const flexible = api.flexibleVersions !== null && version >= api.flexibleVersions[0];
      for (const direction of ['request', 'response'] as const) {
        for (let copy = 0; copy < 2; copy++) {
          const body = sampleStruct(api[direction], version, flexible, rnd);
          plantRecords(body, rnd, blobs);
          const correlationId = int(rnd, 0x7fffffff);
          const frame =
            direction === 'request'
              ? encodeRequestFrame({ apiKey: api.apiKey, apiVersion: version, correlationId, clientId: copy ? null : 'fuzz' }, body)
              : encodeResponseFrame(api.apiKey, version, correlationId, body);
          frames.push({ apiKey: api.apiKey, version, direction, frame });
        }
      }
    }
  }
  return { frames, versions };
}

const EXTREME_INT32 = [0, 1, -1, 0x7fffffff, -0x80000000, 0x10000, 0x7ffffff0, 60, 61];
const EXTREME_INT16 = [0, -1, 0x7fff, -0x8000, 1];
/** Varint and compact-length corruptions: max, overlong, runaway, null, huge counts. */
const VARINTS = [
  [0xff, 0xff, 0xff, 0xff, 0x0f],
  [0xff, 0xff, 0xff, 0xff, 0x7f],
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
  [0x80, 0x80, 0x80, 0x80, 0x80, 0x80],
  [0x00],
  [0x01],
  [0xfe, 0xff, 0xff, 0xff, 0x07],
  [0x81, 0x80, 0x80, 0x80, 0x00],
];

/** One mutation of data (never in place). */
function mutateOnce(data: Buffer, rnd: Rng, donors: () => Buffer): Buffer {
  const at = () => int(rnd, data.length + 1);
  switch (int(rnd, 10)) {
    case 0: {
      const out = Buffer.from(data);
      for (let n = 1 + int(rnd, 8); n > 0 && out.length > 0; n--) out[int(rnd, out.length)]! ^= 1 << int(rnd, 8);
      return out;
    }
    case 1: {
      const out = Buffer.from(data);
      for (let n = 1 + int(rnd, 3); n > 0 && out.length > 0; n--) out[int(rnd, out.length)] = int(rnd, 256);
      return out;
    }
    case 2: {
      const p = at();
      return Buffer.concat([data.subarray(0, p), randomBytes(rnd, 1 + int(rnd, 8)), data.subarray(p)]);
    }
    case 3: {
      const p = at();
      return Buffer.concat([data.subarray(0, p), data.subarray(p + 1 + int(rnd, 8))]);
    }
    case 4:
      return data.subarray(0, at());
    case 5: {
      const out = Buffer.from(data);
      const p = int(rnd, Math.max(1, out.length - 3));
      if (p + 4 <= out.length) out.writeInt32BE(EXTREME_INT32[int(rnd, EXTREME_INT32.length)]!, p);
      return out;
    }
    case 6: {
      const out = Buffer.from(data);
      const p = int(rnd, Math.max(1, out.length - 1));
      if (p + 2 <= out.length) out.writeInt16BE(EXTREME_INT16[int(rnd, EXTREME_INT16.length)]!, p);
      return out;
    }
    case 7: {
      const v = Buffer.from(VARINTS[int(rnd, VARINTS.length)]!);
      const p = at();
      // Overwrite or insert: a length byte replaced, or a longer varint in its place.
      return rnd() < 0.5 ? Buffer.concat([data.subarray(0, p), v, data.subarray(p + v.length)]) : Buffer.concat([data.subarray(0, p), v, data.subarray(p + 1)]);
    }
    case 8: {
      const donor = donors();
      const from = int(rnd, donor.length + 1);
      const piece = donor.subarray(from, from + 1 + int(rnd, 64));
      const p = at();
      return Buffer.concat([data.subarray(0, p), piece, data.subarray(p + int(rnd, piece.length + 1))]);
    }
    default:
      return Buffer.concat([data, randomBytes(rnd, 1 + int(rnd, 16))]);
  }
}

function mutate(data: Buffer, rnd: Rng, donors: () => Buffer): Buffer {
  let out = data;
  for (let n = 1 + int(rnd, 3); n > 0; n--) out = mutateOnce(out, rnd, donors);
  return out;
}

/** Mostly keeps the size prefix true to the (mutated) length, so decoding gets past framing. */
function fixSize(frame: Buffer, rnd: Rng): Buffer {
  if (frame.length >= 4 && rnd() < 0.85) {
    const out = Buffer.from(frame);
    out.writeInt32BE(out.length - 4, 0);
    return out;
  }
  return frame;
}

function errorKind(e: unknown): string {
  if (!(e instanceof Error)) return `non-Error ${typeof e}`;
  const cause = (e as { cause?: unknown }).cause;
  if (
    (e instanceof ProtocolError || e instanceof CorruptRecordError) &&
    cause instanceof Error &&
    !(cause instanceof ProtocolError || cause instanceof CorruptRecordError)
  ) {
    return `${e.name}<${cause.name}>`;
  }
  return e.name;
}

/** Whether a throw is the codec refusing bad input, not a bug. */
function isCodecRejection(e: unknown): boolean {
  if (!(e instanceof ProtocolError || e instanceof CorruptRecordError)) return false;
  const cause = (e as { cause?: unknown }).cause;
  if (cause === undefined || cause instanceof ProtocolError || cause instanceof CorruptRecordError) return true;
  if (!(cause instanceof Error)) return false;
  return !(cause instanceof TypeError || cause instanceof ReferenceError || cause instanceof SyntaxError);
}

class Invariant extends Error {
  override readonly name = 'Invariant';
}

export async function runCodecFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  const hangMs = opts.hangMs;
  const maxRss = opts.maxRssBytes ?? 1024 * 1024 * 1024;
  const bombRate = opts.bombRate ?? 1 / 50_000;
  const first = opts.start ?? 0;
  const setup = seededRng(opts.seed);
  const { blobs, bombs } = await buildBatches(setup);
  const { frames: seeds, versions } = buildFrames(setup, blobs);
  const requests = seeds.filter((s) => s.direction === 'request');
  const responses = seeds.filter((s) => s.direction === 'response');
  const report: FuzzReport = {
    seed: opts.seed,
    frames: 0,
    byFrameKind: {},
    byDecoder: {},
    peakRssBytes: 0,
    peakHeapUsedBytes: 0,
    peakExternalBytes: 0,
    elapsedMs: 0,
    findings: [],
  };
  let frameIndex = 0;
  let input: Buffer = Buffer.alloc(0);
  let target = '';

  const stats = (decoder: string): DecoderStats => (report.byDecoder[decoder] ??= { calls: 0, ok: 0, errors: {}, maxMs: 0 });

  const find = (decoder: string, kind: Finding['kind'], detail: string) => {
    if (report.findings.length < MAX_FINDINGS) {
      report.findings.push({ frame: frameIndex, decoder, kind, detail, target, hex: input.toString('hex') });
    }
  };

  /** Runs one decoder call; returns its value, or undefined when it threw. */
  async function call<T>(decoder: string, run: () => T | Promise<T>): Promise<T | undefined> {
    const s = stats(decoder);
    s.calls++;
    const t0 = performance.now();
    let value: T | undefined;
    try {
      value = await run();
      s.ok++;
    } catch (e) {
      const kind = errorKind(e);
      s.errors[kind] = (s.errors[kind] ?? 0) + 1;
      if (e instanceof Invariant) find(decoder, 'invariant', e.message);
      else if (!isCodecRejection(e)) find(decoder, 'exception', e instanceof Error ? (e.stack ?? e.message) : String(e));
    }
    const ms = performance.now() - t0;
    if (ms > s.maxMs) s.maxMs = ms;
    if (hangMs !== undefined && ms > hangMs) find(decoder, 'hang', `one call took ${ms.toFixed(0)} ms (bound ${hangMs} ms)`);
    return value;
  }

  const check = (ok: boolean, what: string) => {
    if (!ok) throw new Invariant(what);
  };

  /** Every batch decoder over a `records` blob, each step only on what the previous accepted. */
  async function decodeBatches(data: Buffer, produceVersion: number): Promise<void> {
    const walk = await call('iterateBatches', () => iterateBatches(data));
    await call('produceGuard.checkKeys', () => checkKeys(data, produceVersion));
    if (!walk) return;
    for (const header of walk.batches.slice(0, 8)) {
      const crcOk = verifyCrc(data, header);
      const payload = await call('batchPayload', () => batchPayload(data, header));
      if (!payload) continue;
      const records = await call('decodeRecords', () => {
        const r = parseRecords(payload, header);
        check(r.length === header.recordCount, `decoded ${r.length} records of a batch declaring ${header.recordCount}`);
        return r;
      });
      const keys = await call('scanRecordKeys', () => {
        const k = scanRecordKeys(payload, header);
        check(k.length === header.recordCount, `scanned ${k.length} keys of a batch declaring ${header.recordCount}`);
        return k;
      });
      if (header.isControl && records?.[0]) await call('decodeControlRecord', () => decodeControlRecord(records[0]!.key, records[0]!.value));
      if (!keys || keys.length === 0) continue;
      const kept = keys.filter((_, i) => i % 2 === 0);
      await call('rebuildBatch', async () => {
        const rebuilt = await rebuildBatch(header, payload, kept);
        const back = readBatchHeader(rebuilt, 0);
        check(back.recordCount === kept.length, `rebuilt batch holds ${back.recordCount} records, ${kept.length} kept`);
        check(back.end === rebuilt.length, 'rebuilt batch length disagrees with its size');
        // A batch kept whole is passed on byte for byte, a bad CRC included.
        if (crcOk) check(verifyCrc(rebuilt, back), 'rebuilt batch of a batch with a valid CRC fails its CRC');
        else check(kept.length === header.recordCount, 'a batch with a bad CRC was rebuilt with a fresh CRC');
      });
    }
  }

  /** Every `records` field of a decoded body (bounded, a body may hold many). */
  function recordFields(value: unknown, out: Buffer[]): void {
    if (out.length >= 4) return;
    if (Array.isArray(value)) {
      for (const v of value) recordFields(v, out);
    } else if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) {
      for (const [k, v] of Object.entries(value)) {
        if (k === 'records' && Buffer.isBuffer(v) && v.length > 0) out.push(v);
        else recordFields(v, out);
      }
    }
  }

  /** A request frame as the proxy reads it: size prefix, header, then the body when known. */
  async function decodeRequestFrame(frame: Buffer): Promise<void> {
    if (frame.length < 4) return;
    const size = frame.readInt32BE(0);
    if (size < 0 || size > frame.length - 4) return;
    const body = frame.subarray(4, 4 + size);
    const header = await call('requestHeader', () => decodeRequestHeader(body));
    if (!header || header.bodyOffset === null) return;
    const { apiKey, apiVersion } = header;
    target = `request ${APIS[apiKey]?.name} v${apiVersion}`;
    const decoded = await call('decodeRequest', () => decodeRequest(apiKey, apiVersion, body, header.bodyOffset!));
    if (!decoded) return;
    await call('reencodeRequest', () => encodeRequest(apiKey, apiVersion, decoded));
    const records: Buffer[] = [];
    recordFields(decoded, records);
    for (const r of records) await decodeBatches(r, apiKey === ApiKey.Produce ? apiVersion : 9);
  }

  /** A response frame read for the request it answers (the proxy knows the api key and version). */
  async function decodeResponseFrame(frame: Buffer, apiKey: number, version: number): Promise<void> {
    if (frame.length < 4) return;
    const size = frame.readInt32BE(0);
    if (size < 0 || size > frame.length - 4) return;
    const body = frame.subarray(4, 4 + size);
    target = `response ${APIS[apiKey]?.name} v${version}`;
    const header = await call('responseHeader', () => decodeResponseHeader(body, responseHeaderVersion(apiKey, version)));
    if (!header) return;
    const decoded = await call('decodeResponse', () => decodeResponse(apiKey, version, body, header.bodyOffset));
    if (!decoded) return;
    await call('reencodeResponse', () => encodeResponse(apiKey, version, decoded));
    const records: Buffer[] = [];
    recordFields(decoded, records);
    for (const r of records) await decodeBatches(r, 9);
  }

  let rssSampled = 0;
  const sampleMemory = () => {
    const m = process.memoryUsage();
    report.peakRssBytes = Math.max(report.peakRssBytes, m.rss);
    report.peakHeapUsedBytes = Math.max(report.peakHeapUsedBytes, m.heapUsed);
    report.peakExternalBytes = Math.max(report.peakExternalBytes, m.external + m.arrayBuffers);
    if (m.rss > maxRss) find('memory', 'memory', `resident memory ${m.rss} bytes passed the bound of ${maxRss}`);
  };

  const count = (kind: string) => (report.byFrameKind[kind] = (report.byFrameKind[kind] ?? 0) + 1);

  for (frameIndex = first; frameIndex < first + opts.frames; frameIndex++) {
    const rnd = seededRng((opts.seed ^ Math.imul(frameIndex + 1, 0x9e3779b1)) >>> 0);
    const donors = () => seeds[int(rnd, seeds.length)]!.frame;
    const roll = rnd();
    if (roll < bombRate) {
      count('bomb batch');
      const bomb = bombs[int(rnd, bombs.length)]!;
      input = rnd() < 0.5 ? bomb : mutate(bomb, rnd, donors);
      target = 'records (bomb)';
      await decodeBatches(input, 9);
    } else if (roll < 0.45) {
      count('mutated request');
      const s = requests[int(rnd, requests.length)]!;
      input = fixSize(mutate(s.frame, rnd, donors), rnd);
      target = 'request';
      await decodeRequestFrame(input);
    } else if (roll < 0.8) {
      count('mutated response');
      const s = responses[int(rnd, responses.length)]!;
      input = fixSize(mutate(s.frame, rnd, donors), rnd);
      // Now and then read as the answer to another request, as after a correlation mix-up.
      const as = rnd() < 0.85 ? s : versions[int(rnd, versions.length)]!;
      await decodeResponseFrame(input, as.apiKey, as.version);
    } else if (roll < 0.95) {
      count('mutated batch');
      const blob = blobs[int(rnd, blobs.length)]!;
      input = mutate(blob, rnd, () => blobs[int(rnd, blobs.length)]!);
      target = 'records';
      await decodeBatches(input, 3 + int(rnd, 11));
    } else {
      count('random frame');
      input = randomBytes(rnd, int(rnd, 300));
      if (input.length >= 8) {
        input.writeInt32BE(input.length - 4, 0);
        // Often a known api key and a plausible version, so headers and bodies are reached.
        if (rnd() < 0.7) {
          const v = versions[int(rnd, versions.length)]!;
          input.writeInt16BE(v.apiKey, 4);
          input.writeInt16BE(rnd() < 0.8 ? v.version : int(rnd, 0x10000) - 0x8000, 6);
        }
      }
      target = 'request';
      await decodeRequestFrame(input);
      const v = versions[int(rnd, versions.length)]!;
      await decodeResponseFrame(input, v.apiKey, v.version);
    }
    report.frames++;
    if (++rssSampled === 256) {
      rssSampled = 0;
      sampleMemory();
      opts.onProgress?.(report.frames);
    }
  }
  sampleMemory();
  report.elapsedMs = performance.now() - started;
  return report;
}
