import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProtocolError } from '../../../src/protocol/errors.js';
import { Reader } from '../../../src/protocol/wire/reader.js';
import { ZERO_UUID } from '../../../src/protocol/wire/uuid.js';
import { Writer } from '../../../src/protocol/wire/writer.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

function written(fill: (w: Writer) => void): Buffer {
  const w = new Writer(4);
  fill(w);
  return w.finish();
}

test('fixed-width integers are big-endian and signed as declared', () => {
  const bytes = written((w) => {
    w.int8(-2);
    w.int16(-2);
    w.uint16(0xfffe);
    w.int32(-2);
    w.uint32(0xfffffffe);
    w.int64(-2n);
    w.int64(5);
    w.float64(1.5);
    w.bool(true);
    w.bool(false);
  });
  assert.deepStrictEqual(bytes, hex('fe fffe fffe fffffffe fffffffe fffffffffffffffe 0000000000000005 3ff8000000000000 01 00'));
  const r = new Reader(bytes);
  assert.deepStrictEqual(
    [r.int8(), r.int16(), r.uint16(), r.int32(), r.uint32(), r.int64(), r.int64(), r.float64(), r.bool(), r.bool()],
    [-2, -2, 0xfffe, -2, 0xfffffffe, -2n, 5n, 1.5, true, false],
  );
  assert.equal(r.remaining, 0);
});

test("varints: unsigned, zigzag int32 and zigzag int64 match Kafka's encoding", () => {
  const unsigned: [number, string][] = [
    [0, '00'],
    [1, '01'],
    [127, '7f'],
    [128, '8001'],
    [300, 'ac02'],
    [0xffffffff, 'ffffffff0f'],
  ];
  for (const [v, h] of unsigned) {
    assert.deepStrictEqual(
      written((w) => w.uvarint(v)),
      hex(h),
      `uvarint ${v}`,
    );
    assert.equal(new Reader(hex(h)).uvarint(), v, `uvarint ${h}`);
  }
  const zigzag: [number, string][] = [
    [0, '00'],
    [-1, '01'],
    [1, '02'],
    [-64, '7f'],
    [64, '8001'],
    [2147483647, 'feffffff0f'],
    [-2147483648, 'ffffffff0f'],
  ];
  for (const [v, h] of zigzag) {
    assert.deepStrictEqual(
      written((w) => w.varint(v)),
      hex(h),
      `varint ${v}`,
    );
    assert.equal(new Reader(hex(h)).varint(), v, `varint ${h}`);
  }
  const longs: [bigint, string][] = [
    [0n, '00'],
    [-1n, '01'],
    [300n, 'd804'],
    [9223372036854775807n, 'feffffffffffffffff01'],
    [-9223372036854775808n, 'ffffffffffffffffff01'],
  ];
  for (const [v, h] of longs) {
    assert.deepStrictEqual(
      written((w) => w.varlong(v)),
      hex(h),
      `varlong ${v}`,
    );
    assert.equal(new Reader(hex(h)).varlong(), v, `varlong ${h}`);
  }
});

test('overlong or truncated varints are ProtocolErrors', () => {
  assert.throws(() => new Reader(hex('ffffffff1f')).uvarint(), /exceeds 32 bits/);
  assert.throws(() => new Reader(hex('ffffffffff01')).uvarint(), /exceeds 32 bits/);
  assert.throws(() => new Reader(hex('8080')).uvarint(), /runs past the end/);
  assert.throws(() => new Reader(hex('ffffffffffffffffff03')).varlong(), /exceeds 64 bits/);
  assert.throws(() => new Reader(hex('80')).varlong(), /runs past the end/);
  assert.throws(() => written((w) => w.uvarint(-1)), ProtocolError);
  assert.throws(() => written((w) => w.uvarint(2 ** 32)), ProtocolError);
  assert.throws(() => written((w) => w.varint(2 ** 31)), ProtocolError);
  assert.throws(() => written((w) => w.varlong(2n ** 63n)), ProtocolError);
});

test('every read past the end throws ProtocolError, also inside a bounded range', () => {
  const reads: ((r: Reader) => unknown)[] = [
    (r) => r.int8(),
    (r) => r.int16(),
    (r) => r.int32(),
    (r) => r.int64(),
    (r) => r.float64(),
    (r) => r.uuid(),
    (r) => r.string(),
    (r) => r.bytes(),
    (r) => r.arrayLength(),
    (r) => r.uvarint(),
  ];
  for (const read of reads) {
    assert.throws(() => read(new Reader(Buffer.alloc(0))), ProtocolError);
    // Bytes exist in the buffer but lie beyond the reader's end.
    assert.throws(() => read(new Reader(Buffer.alloc(32, 0x7f), 4, 4)), ProtocolError);
  }
  assert.throws(() => new Reader(Buffer.alloc(4), 5), ProtocolError);
  assert.throws(() => new Reader(Buffer.alloc(4), 2, 1), ProtocolError);
});

test('strings: int16 and compact lengths, null, UTF-8 byte lengths', () => {
  const bytes = written((w) => {
    w.string('é€');
    w.nullableString(null);
    w.compactString('');
    w.compactNullableString(null);
    w.compactString('😀');
  });
  assert.deepStrictEqual(bytes, hex('0005 c3a9e282ac ffff 01 00 05 f09f9880'));
  const r = new Reader(bytes);
  assert.deepStrictEqual([r.string(), r.nullableString(), r.compactString(), r.compactNullableString(), r.compactString()], ['é€', null, '', null, '😀']);
  assert.throws(() => new Reader(hex('ffff')).string(), /null in a non-nullable field/);
  assert.throws(() => new Reader(hex('00')).compactString(), /null in a non-nullable field/);
  assert.throws(() => new Reader(Buffer.concat([hex('818002'), Buffer.alloc(40000)])).compactString(), /string length 32768 exceeds 32767/);
});

test('bytes are zero-copy views; lengths are checked before slicing', () => {
  const input = hex('00000003 aabbcc 04 ddeeff ffffffff 00');
  const r = new Reader(input);
  const a = r.bytes();
  const b = r.compactBytes();
  assert.deepStrictEqual([a, b], [hex('aabbcc'), hex('ddeeff')]);
  assert.equal(a.buffer, input.buffer);
  assert.equal(r.nullableBytes(), null);
  assert.equal(r.compactNullableBytes(), null);
  assert.throws(() => new Reader(hex('7fffffff 00')).bytes(), /length 2147483647 exceeds remaining 1 bytes/);
  assert.throws(() => new Reader(hex('7fffffff 00')).arrayLength(), /count 2147483647 exceeds remaining 1 bytes/);
  assert.equal(new Reader(hex('ffffffff')).arrayLength(), -1);
  assert.equal(new Reader(hex('00')).compactArrayLength(), -1);
});

test("uuids use Kafka's URL-safe base64 form and reject other strings", () => {
  const bytes = hex('0123456789abcdeffedcba9876543210');
  const s = new Reader(bytes).uuid();
  assert.equal(s, 'ASNFZ4mrze_-3LqYdlQyEA');
  assert.deepStrictEqual(
    written((w) => w.uuid(s)),
    bytes,
  );
  assert.equal(new Reader(Buffer.alloc(16)).uuid(), ZERO_UUID);
  for (const bad of ['', 'ASNFZ4mrze_-3LqYdlQyEA==', 'ASNFZ4mrze/+3LqYdlQyEA', 'ASNFZ4mrze_-3LqYdlQyEB', 7]) {
    assert.throws(() => written((w) => w.uuid(bad as string)), ProtocolError, `uuid ${String(bad)}`);
  }
});

test('tagged field sections keep tags and raw data', () => {
  const bytes = written((w) =>
    w.taggedFields([
      { tag: 0, data: hex('01') },
      { tag: 300, data: Buffer.alloc(0) },
    ]),
  );
  assert.deepStrictEqual(bytes, hex('02 00 01 01 ac02 00'));
  assert.deepStrictEqual(new Reader(bytes).taggedFields(), [
    { tag: 0, data: hex('01') },
    { tag: 300, data: Buffer.alloc(0) },
  ]);
  assert.throws(() => new Reader(hex('05 00')).taggedFields(), /tagged field count 5 exceeds remaining 1 bytes/);
});

test('the writer grows and joins large chunks into one buffer in order', () => {
  const big = Buffer.alloc(5000, 0xab);
  const w = new Writer(8);
  w.int32(1);
  w.compactBytes(big);
  w.int32(2);
  w.bytes(big.subarray(0, 1500));
  for (let i = 0; i < 100; i++) w.int16(i);
  assert.equal(w.length, 4 + 2 + 5000 + 4 + 4 + 1500 + 200);
  const out = w.finish();
  const r = new Reader(out);
  assert.equal(r.int32(), 1);
  assert.deepStrictEqual(r.compactBytes(), big);
  assert.equal(r.int32(), 2);
  assert.deepStrictEqual(r.bytes(), big.subarray(0, 1500));
  for (let i = 0; i < 100; i++) assert.equal(r.int16(), i);
  assert.equal(r.remaining, 0);
  assert.notEqual(out.buffer, big.buffer, 'the output must not alias the input');
});

test('the writer rejects values of the wrong type or range', () => {
  assert.throws(() => written((w) => w.int64(1.5)), ProtocolError);
  assert.throws(() => written((w) => w.int64(2 ** 60)), ProtocolError);
  assert.throws(() => written((w) => w.bool(1 as unknown as boolean)), ProtocolError);
  assert.throws(() => written((w) => w.string(null as unknown as string)), ProtocolError);
  assert.throws(() => written((w) => w.bytes('x' as unknown as Buffer)), ProtocolError);
  assert.throws(() => written((w) => w.int32(2 ** 31)), /expected an int32, got 2147483648/);
  assert.throws(() => written((w) => w.int16(1.5)), /expected an int16, got 1.5/);
  assert.throws(() => written((w) => w.int8('1' as unknown as number)), /expected an int8, got string/);
  assert.throws(() => written((w) => w.uint16(-1)), ProtocolError);
  assert.throws(() => written((w) => w.uint32(2 ** 32)), ProtocolError);
  assert.throws(() => written((w) => w.float64(undefined as unknown as number)), ProtocolError);
  assert.throws(() => written((w) => w.int64(2n ** 63n)), ProtocolError);
});
