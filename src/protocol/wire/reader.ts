import { ProtocolError } from '../errors.js';
import type { TaggedField } from './tagged-field.js';
import { uuidToString } from './uuid.js';

const MAX_STRING_BYTES = 0x7fff;
const EMPTY = Buffer.alloc(0);

/**
 * A cursor over [pos, end) of a Buffer. Every read checks the bytes it needs against `end`
 * and every length or count is checked against the remaining bytes before anything is
 * allocated, so malformed input fails with a ProtocolError instead of reading past the end
 * or allocating what the input cannot hold. Byte strings are returned as zero-copy views.
 */
export class Reader {
  readonly buf: Buffer;
  pos: number;
  end: number;
  /** A null bytes field where the schema allows none reads as empty, as clients read answers (decodeResponseLeniently). */
  nullBytesAsEmpty = false;

  constructor(buf: Buffer, offset = 0, end = buf.length) {
    if (!Buffer.isBuffer(buf)) throw new ProtocolError('input is not a Buffer');
    if (!(Number.isInteger(offset) && Number.isInteger(end) && offset >= 0 && offset <= end && end <= buf.length)) {
      throw new ProtocolError(`range [${offset}, ${end}) is outside a buffer of ${buf.length} bytes`);
    }
    this.buf = buf;
    this.pos = offset;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  private need(n: number): void {
    if (this.end - this.pos < n) {
      throw new ProtocolError(`${n} bytes needed, ${this.end - this.pos} remaining`);
    }
  }

  /** Validates a length or element count read from the wire against the remaining bytes. */
  private checkLength(n: number, what: string): number {
    if (n > this.end - this.pos) {
      throw new ProtocolError(`${what} ${n} exceeds remaining ${this.end - this.pos} bytes`);
    }
    return n;
  }

  int8(): number {
    this.need(1);
    return (this.buf[this.pos++]! << 24) >> 24;
  }

  bool(): boolean {
    this.need(1);
    return this.buf[this.pos++] !== 0;
  }

  int16(): number {
    this.need(2);
    const b = this.buf;
    const p = this.pos;
    this.pos = p + 2;
    return (((b[p]! << 8) | b[p + 1]!) << 16) >> 16;
  }

  uint16(): number {
    this.need(2);
    const b = this.buf;
    const p = this.pos;
    this.pos = p + 2;
    return (b[p]! << 8) | b[p + 1]!;
  }

  int32(): number {
    this.need(4);
    const b = this.buf;
    const p = this.pos;
    this.pos = p + 4;
    return (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;
  }

  uint32(): number {
    return this.int32() >>> 0;
  }

  int64(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v;
  }

  float64(): number {
    this.need(8);
    const v = this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Unsigned LEB128 varint of at most 32 bits (5 bytes), as Kafka's readUnsignedVarint. */
  uvarint(): number {
    const b = this.buf;
    let p = this.pos;
    if (p < this.end && b[p]! < 0x80) {
      this.pos = p + 1;
      return b[p]!;
    }
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (p >= this.end) throw new ProtocolError('unsigned varint runs past the end');
      const byte = b[p++]!;
      if (shift === 28 && byte > 0x0f) throw new ProtocolError('unsigned varint exceeds 32 bits');
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) {
        this.pos = p;
        return value;
      }
    }
  }

  /** Zigzag-encoded 32-bit varint. */
  varint(): number {
    const u = this.uvarint();
    return (u >>> 1) ^ -(u & 1);
  }

  /** Zigzag-encoded 64-bit varint (at most 10 bytes). */
  varlong(): bigint {
    const b = this.buf;
    let p = this.pos;
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (p >= this.end) throw new ProtocolError('varlong runs past the end');
      const byte = b[p++]!;
      if (shift === 63n && byte > 0x01) throw new ProtocolError('varlong exceeds 64 bits');
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) {
        this.pos = p;
        return (value >> 1n) ^ -(value & 1n);
      }
    }
  }

  uuid(): string {
    this.need(16);
    const s = uuidToString(this.buf, this.pos);
    this.pos += 16;
    return s;
  }

  /** n bytes as a view sharing memory with the input. */
  slice(n: number): Buffer {
    this.checkLength(n, 'length');
    const p = this.pos;
    this.pos = p + n;
    return this.buf.subarray(p, p + n);
  }

  /** n bytes decoded as UTF-8. */
  utf8(n: number): string {
    if (n > MAX_STRING_BYTES) throw new ProtocolError(`string length ${n} exceeds ${MAX_STRING_BYTES}`);
    this.checkLength(n, 'length');
    const p = this.pos;
    this.pos = p + n;
    return this.buf.toString('utf8', p, p + n);
  }

  nullableString(): string | null {
    const n = this.int16();
    return n < 0 ? null : this.utf8(n);
  }

  string(): string {
    return nonNull(this.nullableString());
  }

  compactNullableString(): string | null {
    const n = this.uvarint() - 1;
    return n < 0 ? null : this.utf8(n);
  }

  compactString(): string {
    return nonNull(this.compactNullableString());
  }

  nullableBytes(): Buffer | null {
    const n = this.int32();
    return n < 0 ? null : this.slice(n);
  }

  bytes(): Buffer {
    return this.bytesOrEmpty(this.nullableBytes());
  }

  compactNullableBytes(): Buffer | null {
    const n = this.uvarint() - 1;
    return n < 0 ? null : this.slice(n);
  }

  compactBytes(): Buffer {
    return this.bytesOrEmpty(this.compactNullableBytes());
  }

  private bytesOrEmpty(value: Buffer | null): Buffer {
    return value === null && this.nullBytesAsEmpty ? EMPTY : nonNull(value);
  }

  /**
   * An int32 element count, -1 for a null array. Every element takes at least one byte, so a
   * count beyond the remaining bytes is rejected before the caller allocates (as Kafka does).
   */
  arrayLength(): number {
    const n = this.int32();
    return n < 0 ? -1 : this.checkLength(n, 'count');
  }

  /** A compact (uvarint count + 1) element count, -1 for a null array. */
  compactArrayLength(): number {
    const n = this.uvarint() - 1;
    return n < 0 ? -1 : this.checkLength(n, 'count');
  }

  /** A tagged-field section kept raw: count, then tag, size and data for each. */
  taggedFields(): TaggedField[] {
    const count = this.checkLength(this.uvarint(), 'tagged field count');
    const fields: TaggedField[] = [];
    for (let i = 0; i < count; i++) {
      const tag = this.uvarint();
      fields.push({ tag, data: this.slice(this.uvarint()) });
    }
    return fields;
  }
}

function nonNull<T>(value: T | null): T {
  if (value === null) throw new ProtocolError('null in a non-nullable field');
  return value;
}
