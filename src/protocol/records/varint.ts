import { CorruptRecordError } from './errors.js';

/*
 * Kafka's record fields use protobuf-style zigzag varints: varint for int32 (at most 5 bytes),
 * varlong for int64 (at most 10). Varlongs are handled as JavaScript numbers: exact for
 * |value| <= 2^53, which covers every real timestamp delta (milliseconds since 1970 are ~2^41);
 * larger ones, only ever seen in hostile input, are rounded to the nearest double.
 */

/** A read position in a buffer that never moves past `limit`. */
export class Cursor {
  constructor(
    readonly buf: Buffer,
    public pos: number,
    public limit: number,
  ) {}

  varint(): number {
    const buf = this.buf;
    let pos = this.pos;
    if (pos >= this.limit) throw truncated('varint');
    let b = buf[pos++]!;
    if (b < 0x80) {
      this.pos = pos;
      return (b >>> 1) ^ -(b & 1);
    }
    let raw = b & 0x7f;
    for (let shift = 7; ; shift += 7) {
      if (pos >= this.limit) throw truncated('varint');
      b = buf[pos++]!;
      if (shift === 28) {
        if (b & 0x80) throw new CorruptRecordError('varint longer than 5 bytes');
        // Like Java, bits past the 32nd fall off.
        raw |= b << 28;
        break;
      }
      raw |= (b & 0x7f) << shift;
      if (b < 0x80) break;
    }
    this.pos = pos;
    return (raw >>> 1) ^ -(raw & 1);
  }

  varlong(): number {
    const buf = this.buf;
    const start = this.pos;
    let pos = start;
    if (pos >= this.limit) throw truncated('varlong');
    let b = buf[pos++]!;
    let raw = b & 0x7f;
    // Up to 28 bits (4 bytes: any delta under ~37 hours) in int32 arithmetic, the common case.
    for (let shift = 7; b >= 0x80; shift += 7) {
      if (shift === 28) return this.wideVarlong(start, raw, pos);
      if (pos >= this.limit) throw truncated('varlong');
      b = buf[pos++]!;
      raw |= (b & 0x7f) << shift;
    }
    this.pos = pos;
    return (raw >>> 1) ^ -(raw & 1);
  }

  /** Continues a varlong past 28 bits in double arithmetic (exact to 49), then BigInt. */
  private wideVarlong(start: number, low: number, pos: number): number {
    let raw = low;
    let scale = 2 ** 28;
    for (let i = 0; i < 3; i++, scale *= 128) {
      if (pos >= this.limit) throw truncated('varlong');
      const b = this.buf[pos++]!;
      raw += (b & 0x7f) * scale;
      if (b < 0x80) {
        this.pos = pos;
        return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
      }
    }
    return this.longVarlong(start);
  }

  private longVarlong(start: number): number {
    this.pos = start;
    return Number(this.varlongBig());
  }

  /** A varlong as a bigint: exact over all of int64 (producer ids are random 63-bit numbers on some stores). */
  varlongBig(): bigint {
    let raw = 0n;
    let pos = this.pos;
    for (let i = 0; ; i++) {
      if (pos >= this.limit) throw truncated('varlong');
      const b = this.buf[pos++]!;
      raw |= BigInt(b & 0x7f) << BigInt(7 * i);
      if (b < 0x80) break;
      if (i === 9) throw new CorruptRecordError('varlong longer than 10 bytes');
    }
    this.pos = pos;
    raw = BigInt.asUintN(64, raw);
    return BigInt.asIntN(64, (raw >> 1n) ^ -(raw & 1n));
  }

  int8(): number {
    if (this.pos >= this.limit) throw truncated('attributes');
    return this.buf[this.pos++]!;
  }
}

function truncated(what: string): CorruptRecordError {
  return new CorruptRecordError(`record data ends inside a ${what}`);
}

function zigzag32(value: number): number {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

export function sizeOfVarint(value: number): number {
  const z = zigzag32(value);
  return z < 0x80 ? 1 : z < 0x4000 ? 2 : z < 0x200000 ? 3 : z < 0x10000000 ? 4 : 5;
}

export function writeVarint(buf: Buffer, pos: number, value: number): number {
  let z = zigzag32(value);
  while (z >= 0x80) {
    buf[pos++] = (z & 0x7f) | 0x80;
    z >>>= 7;
  }
  buf[pos++] = z;
  return pos;
}

/** Zigzag form of an int64 given as a number (must be a safe integer) or a bigint. */
function zigzag64(value: number | bigint): number | bigint {
  if (typeof value === 'bigint') {
    const v = BigInt.asIntN(64, value);
    return BigInt.asUintN(64, (v << 1n) ^ (v >> 63n));
  }
  if (!Number.isSafeInteger(value)) throw new RangeError(`varlong value ${value} is not a safe integer; pass a bigint`);
  // Past 2^52 the doubled value is no longer exact as a double.
  if (Math.abs(value) > 2 ** 52) return zigzag64(BigInt(value));
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

export function sizeOfVarlong(value: number | bigint): number {
  let z = zigzag64(value);
  let size = 1;
  if (typeof z === 'bigint') {
    while (z >= 0x80n) {
      z >>= 7n;
      size++;
    }
    return size;
  }
  while (z >= 0x80) {
    z = Math.floor(z / 0x80);
    size++;
  }
  return size;
}

export function writeVarlong(buf: Buffer, pos: number, value: number | bigint): number {
  let z = zigzag64(value);
  if (typeof z === 'bigint') {
    while (z >= 0x80n) {
      buf[pos++] = Number(z & 0x7fn) | 0x80;
      z >>= 7n;
    }
    buf[pos++] = Number(z);
    return pos;
  }
  while (z >= 0x80) {
    buf[pos++] = (z % 0x80) | 0x80;
    z = Math.floor(z / 0x80);
  }
  buf[pos++] = z;
  return pos;
}
