import { ProtocolError } from '../errors.js';
import { ByteParts } from './byte-parts.js';
import type { TaggedField } from './tagged-field.js';
import { writeUuid } from './uuid.js';

const MAX_STRING_BYTES = 0x7fff;
// Byte strings at least this long are kept by reference and copied once, into the final
// buffer, instead of through the growing scratch buffer (Fetch/Produce records are megabytes).
const LARGE_CHUNK = 1024;

/**
 * Appends Kafka primitives to a growable scratch buffer. Large byte strings are referenced
 * rather than copied; finish() assembles everything into one Buffer with a single copy, and
 * finishParts() hands the pieces on as they are. A byte field may be given in pieces (ByteParts).
 * Values are validated (range, type, nullability) and rejected with a ProtocolError.
 */
export class Writer {
  private buf: Buffer;
  private pos = 0;
  /** Start of the part of `buf` not yet handed to `chunks`. */
  private segmentStart = 0;
  private readonly chunks: Uint8Array[] = [];
  private chunkedBytes = 0;
  /** Byte fields in pieces, some kept by reference: done once the written bytes no longer need them. */
  private readonly referenced: ByteParts[] = [];

  constructor(initialCapacity = 256) {
    this.buf = Buffer.allocUnsafe(initialCapacity);
  }

  /** Bytes written so far. */
  get length(): number {
    return this.chunkedBytes + this.pos - this.segmentStart;
  }

  private ensure(n: number): void {
    if (this.buf.length - this.pos >= n) return;
    const used = this.pos - this.segmentStart;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, used + n));
    this.buf.copy(grown, 0, this.segmentStart, this.pos);
    this.buf = grown;
    this.segmentStart = 0;
    this.pos = used;
  }

  int8(v: number): void {
    checkInteger(v, -0x80, 0x7f, 'an int8');
    this.ensure(1);
    this.buf[this.pos++] = v & 0xff;
  }

  bool(v: boolean): void {
    if (typeof v !== 'boolean') throw new ProtocolError(`expected a boolean, got ${describe(v)}`);
    this.ensure(1);
    this.buf[this.pos++] = v ? 1 : 0;
  }

  int16(v: number): void {
    checkInteger(v, -0x8000, 0x7fff, 'an int16');
    this.put16(v);
  }

  uint16(v: number): void {
    checkInteger(v, 0, 0xffff, 'a uint16');
    this.put16(v);
  }

  private put16(v: number): void {
    this.ensure(2);
    const b = this.buf;
    const p = this.pos;
    b[p] = (v >>> 8) & 0xff;
    b[p + 1] = v & 0xff;
    this.pos = p + 2;
  }

  int32(v: number): void {
    checkInteger(v, -0x80000000, 0x7fffffff, 'an int32');
    this.put32(v);
  }

  uint32(v: number): void {
    checkInteger(v, 0, 0xffffffff, 'a uint32');
    this.put32(v);
  }

  private put32(v: number): void {
    this.ensure(4);
    const b = this.buf;
    const p = this.pos;
    b[p] = v >>> 24;
    b[p + 1] = (v >>> 16) & 0xff;
    b[p + 2] = (v >>> 8) & 0xff;
    b[p + 3] = v & 0xff;
    this.pos = p + 4;
  }

  /** Accepts a safe integer number as well as a bigint. */
  int64(v: bigint | number): void {
    if (typeof v !== 'bigint') {
      if (!Number.isSafeInteger(v)) throw new ProtocolError(`expected a bigint, got ${describe(v)} ${String(v)}`);
      v = BigInt(v);
    } else if (BigInt.asIntN(64, v) !== v) {
      throw new ProtocolError(`expected an int64, got ${v}`);
    }
    this.ensure(8);
    this.pos = this.buf.writeBigInt64BE(v, this.pos);
  }

  float64(v: number): void {
    if (typeof v !== 'number') throw new ProtocolError(`expected a float64, got ${describe(v)}`);
    this.ensure(8);
    this.pos = this.buf.writeDoubleBE(v, this.pos);
  }

  uvarint(v: number): void {
    checkInteger(v, 0, 0xffffffff, 'an unsigned varint');
    this.ensure(5);
    const b = this.buf;
    let p = this.pos;
    while (v >= 0x80) {
      b[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[p++] = v;
    this.pos = p;
  }

  /** Zigzag-encoded 32-bit varint. */
  varint(v: number): void {
    checkInteger(v, -0x80000000, 0x7fffffff, 'a varint');
    this.uvarint(((v << 1) ^ (v >> 31)) >>> 0);
  }

  /** Zigzag-encoded 64-bit varint. */
  varlong(v: bigint): void {
    if (typeof v !== 'bigint' || BigInt.asIntN(64, v) !== v) throw new ProtocolError(`expected a 64-bit bigint, got ${String(v)}`);
    let u = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
    this.ensure(10);
    const b = this.buf;
    let p = this.pos;
    while (u >= 0x80n) {
      b[p++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    b[p++] = Number(u);
    this.pos = p;
  }

  uuid(v: string): void {
    this.ensure(16);
    writeUuid(v, this.buf, this.pos);
    this.pos += 16;
  }

  /** Appends bytes as they are. */
  raw(data: Uint8Array | ByteParts): void {
    if (data instanceof ByteParts) return this.rawParts(data);
    const n = data.length;
    if (n >= LARGE_CHUNK) {
      if (this.pos > this.segmentStart) this.chunks.push(this.buf.subarray(this.segmentStart, this.pos));
      this.chunks.push(data);
      this.chunkedBytes += this.pos - this.segmentStart + n;
      this.segmentStart = this.pos;
      return;
    }
    this.ensure(n);
    this.buf.set(data, this.pos);
    this.pos += n;
  }

  private rawParts(data: ByteParts): void {
    const { parts } = data;
    let byReference = false;
    for (let i = 0; i < parts.length;) {
      if (parts[i]!.length >= LARGE_CHUNK) {
        this.raw(parts[i++]!);
        byReference = true;
        continue;
      }
      // A run of small parts (a read of tiny batches) is copied once, together, as one piece.
      let end = i;
      let bytes = 0;
      while (end < parts.length && parts[end]!.length < LARGE_CHUNK) bytes += parts[end++]!.length;
      if (bytes >= LARGE_CHUNK) this.raw(Buffer.concat(parts.slice(i, end), bytes));
      else while (i < end) this.raw(parts[i++]!);
      i = end;
    }
    // Parts that were copied are read by now.
    if (byReference) this.referenced.push(data);
    else data.done();
  }

  private utf8Length(s: unknown): number {
    if (typeof s !== 'string') throw new ProtocolError(`expected a string, got ${describe(s)}`);
    const n = Buffer.byteLength(s, 'utf8');
    if (n > MAX_STRING_BYTES) throw new ProtocolError(`string of ${n} bytes exceeds ${MAX_STRING_BYTES}`);
    return n;
  }

  private utf8(s: string, n: number): void {
    this.ensure(n);
    this.pos += this.buf.write(s, this.pos, n, 'utf8');
  }

  string(s: string): void {
    const n = this.utf8Length(s);
    this.int16(n);
    this.utf8(s, n);
  }

  nullableString(s: string | null): void {
    if (s === null) this.int16(-1);
    else this.string(s);
  }

  compactString(s: string): void {
    const n = this.utf8Length(s);
    this.uvarint(n + 1);
    this.utf8(s, n);
  }

  compactNullableString(s: string | null): void {
    if (s === null) this.uvarint(0);
    else this.compactString(s);
  }

  bytes(b: Uint8Array | ByteParts): void {
    this.int32(byteLength(b));
    this.raw(b);
  }

  nullableBytes(b: Uint8Array | ByteParts | null): void {
    if (b === null) this.int32(-1);
    else this.bytes(b);
  }

  compactBytes(b: Uint8Array | ByteParts): void {
    this.uvarint(byteLength(b) + 1);
    this.raw(b);
  }

  compactNullableBytes(b: Uint8Array | ByteParts | null): void {
    if (b === null) this.uvarint(0);
    else this.compactBytes(b);
  }

  /** An int32 element count; -1 writes a null array. */
  arrayLength(n: number): void {
    this.int32(n);
  }

  /** A compact element count (uvarint count + 1); -1 writes a null array. */
  compactArrayLength(n: number): void {
    this.uvarint(n + 1);
  }

  /** A raw tagged-field section, in the order given. */
  taggedFields(fields: readonly TaggedField[]): void {
    this.uvarint(fields.length);
    for (const f of fields) {
      this.uvarint(f.tag);
      this.uvarint(byteLength(f.data));
      this.raw(f.data);
    }
  }

  /**
   * Everything written, as the pieces it was kept in (byte strings by reference); the writer is
   * done after this. Their done() is that of every byte field in pieces they hold.
   */
  finishParts(): ByteParts {
    const length = this.length;
    if (this.pos > this.segmentStart || this.chunks.length === 0) this.chunks.push(this.buf.subarray(this.segmentStart, this.pos));
    const fields = this.referenced;
    const release = fields.length === 0 ? undefined : () => fields.forEach((f) => f.done());
    return new ByteParts(this.chunks as Buffer[], length, release);
  }

  /** Everything written, as one Buffer the caller owns; the writer is done after this. */
  finish(): Buffer {
    if (this.chunks.length === 0) return this.buf.subarray(0, this.pos);
    const total = this.length;
    if (this.pos > this.segmentStart) this.chunks.push(this.buf.subarray(this.segmentStart, this.pos));
    const whole = Buffer.concat(this.chunks, total);
    for (const f of this.referenced) f.done();
    return whole;
  }
}

function byteLength(b: unknown): number {
  if (b instanceof ByteParts) return b.length;
  if (!(b instanceof Uint8Array)) throw new ProtocolError(`expected a Buffer, got ${describe(b)}`);
  return b.length;
}

function checkInteger(v: unknown, min: number, max: number, what: string): void {
  if (!(typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max)) {
    throw new ProtocolError(`expected ${what}, got ${typeof v === 'number' ? v : describe(v)}`);
  }
}

function describe(v: unknown): string {
  return v === null ? 'null' : typeof v;
}
