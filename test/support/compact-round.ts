/**
 * The round the security tests (tls, sasl) run through a proxy on a compacted topic, so that
 * every hop a client's secured connection takes carries real compaction: five records with old
 * timestamps and a current one (the virtual segment rolls, so the first five are cleanable), a
 * clean on demand that removes three, and kafkajs reading the survivors.
 */
import assert from 'node:assert/strict';
import type kafkajs from 'kafkajs';
import type { CliProxy } from './kcompact-cli.js';
import { pollUntil } from './processes.js';

/** Offset, key and value of the records the clean leaves. */
export const ROUND_SURVIVORS: readonly [number, string, string][] = [
  [3, 'b', '2'],
  [4, 'a', '3'],
  [5, 'c', 'roll'],
];

/** Writes the round with `producer`, cleans it and reads it back with `consumer` (both connected here). */
export async function compactRound(cli: CliProxy, topic: string, producer: kafkajs.Producer, consumer: kafkajs.Consumer): Promise<void> {
  await producer.connect();
  const old = String(Date.now() - 60_000);
  const records = [
    ['a', '1'],
    ['b', '1'],
    ['a', '2'],
    ['b', '2'],
    ['a', '3'],
  ].map(([key, value]) => ({ key, value, timestamp: old }));
  await producer.send({ topic, acks: -1, messages: records });
  await producer.send({ topic, acks: -1, messages: [{ key: 'c', value: 'roll' }] });

  // The indexer tails the upstream over the same secured hop; the clean waits for it to catch up.
  const clean = await cli.http(`/compact?topic=${topic}`, 'POST');
  assert.equal(clean.status, 200, clean.body);
  assert.equal((JSON.parse(clean.body) as { cleaned: { removed: number }[] }).cleaned[0]?.removed, 3, clean.body);

  const seen: [number, string, string][] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => void seen.push([Number(message.offset), String(message.key), String(message.value)]) });
  await pollUntil('kafkajs reads the survivors', 30_000, async () => (seen.length >= ROUND_SURVIVORS.length ? true : undefined));
  assert.deepEqual(seen, ROUND_SURVIVORS);
}
