import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Partitioners } from 'kafkajs';
import { defaultPartition, murmur2, toPositive } from '../../../src/tables/default-partitioner.js';

test("murmur2 gives Kafka's own test vectors (UtilsTest.testMurmur2)", () => {
  const cases: [string | number[], number][] = [
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    [[0x61, 0x62, 0x63], 479470107],
  ];
  for (const [input, expected] of cases) assert.equal(murmur2(Buffer.from(input as string)), expected, JSON.stringify(input));
});

test('murmur2 and the partition agree with kafka-clients 4.4 on every tail length and on bytes above 0x7f', () => {
  // Printed by Utils.murmur2 and Utils.toPositive(...) % n of kafka-clients-4.4.0.jar.
  const cases: [Buffer, number, number, number][] = [
    [Buffer.from(''), 275646681, 12, 9],
    [Buffer.from('a'), -1563381124, 12, 4],
    [Buffer.from('ab'), 316155434, 12, 2],
    [Buffer.from('abc'), 479470107, 12, 3],
    [Buffer.from('abcd'), -1323649548, 12, 8],
    [Buffer.from('abcde'), 461995741, 12, 1],
    [Buffer.from('1'), -1993445489, 12, 3],
    [Buffer.from('0'), 971027396, 12, 8],
    [Buffer.from('2187'), -1508407203, 12, 5],
    [Buffer.from('été ☃', 'utf8'), 265277273, 12, 5],
    [Buffer.from([0x00, 0xff, 0x80, 0x7f, 0xfe, 0x01, 0x9c]), 701060392, 7, 4],
  ];
  for (const [key, hash, partitions, partition] of cases) {
    assert.equal(murmur2(key), hash, key.toString('hex'));
    assert.equal(defaultPartition(key, partitions), partition, key.toString('hex'));
  }
});

test("toPositive clears the sign bit as Kafka's does, not Math.abs", () => {
  assert.equal(toPositive(-1), 0x7fffffff);
  assert.equal(toPositive(-2147483648), 0);
  assert.equal(toPositive(5), 5);
});

test("the partition is kafkajs' DefaultPartitioner's (the Java-compatible one) for random keys", () => {
  const partitioner = Partitioners.DefaultPartitioner();
  for (const partitions of [1, 3, 12, 100]) {
    const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      partitionErrorCode: 0,
      replicas: [0],
      isr: [0],
    }));
    for (let i = 0; i < 200; i++) {
      const key = randomBytes(i % 40);
      assert.equal(defaultPartition(key, partitions), partitioner({ topic: 't', partitionMetadata, message: { key, value: null } }), key.toString('hex'));
    }
  }
});

test('a topic without partitions has no default partition', () => {
  assert.throws(() => defaultPartition(Buffer.from('k'), 0), RangeError);
});
