/**
 * Schema-aware key identity against a real schema registry (Apicurio, Confluent-compatible API)
 * and a real upstream without compaction (kfake). The same logical key is written under several
 * key schema ids: v1, v2 (v1 plus a doc string: the same payload bytes under a new id) and v3
 * (the fields reordered, under another subject: other payload bytes, the same decoded value),
 * and a tombstone under v2 deletes a key written under v1. Three proxies read the same upstream
 * log with keyIdentity bytes, payload and registry, and clients reading through each from
 * offset 0 see what that identity keeps: every copy (as Kafka), the copies with equal payloads
 * merged, or one copy per decoded value. An id the registry does not know holds that
 * partition's indexing back until the registry has it; a change of mode rebuilds the index.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { KEY_DIGEST_BYTES } from '../../src/engine/store/key-digest.js';
import { KeyIdentities } from '../../src/engine/key-identity/key-identities.js';
import { RegistrySchemas } from '../../src/engine/key-identity/registry-schemas.js';
import { SchemaUnavailableError } from '../../src/engine/key-identity/schema-unavailable.js';
import type { StaticTopic } from '../../src/compaction/config/topic-configs.js';
import { setLogSink, type Logger } from '../../src/common/log.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import {
  franzConsume,
  freePort,
  makeTempDir,
  pollUntil,
  requirePeers,
  startKfake,
  startSchemaRegistry,
  TEST_BED,
  type RecordView,
  type RunningKfake,
  type RunningSchemaRegistry,
} from '../support/index.js';

const TOPIC = 'schema-keys';
/** Its records' key schema is registered only once indexing has waited for it. */
const PENDING_TOPIC = 'schema-keys-pending';
const DELETE_RETENTION_MS = 1000;

/** segment.ms 1 with records a second apart: every record is its own virtual segment, so all but the last are cleanable. */
const STATIC_TOPICS: StaticTopic[] = [TOPIC, PENDING_TOPIC].map((topic) => ({
  topic,
  configs: { 'cleanup.policy': 'compact', 'segment.ms': '1', 'delete.retention.ms': String(DELETE_RETENTION_MS) },
}));

const keyV1 = {
  type: 'record',
  name: 'OrderKey',
  namespace: 'dev.kcompact.test',
  fields: [
    { name: 'orderId', type: 'string' },
    { name: 'region', type: 'string' },
  ],
};
/** A new id with the same encoding: a doc string changes the schema, not the bytes. */
const keyV2 = { ...keyV1, doc: 'The key of an order, now documented.' };
/** Other bytes, the same value: Avro writes fields in schema order, canonical JSON sorts them. */
const keyV3 = { ...keyV1, fields: [...keyV1.fields].reverse() };

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, child: () => quiet, enabled: () => false };

/** The digest a key gets under the registry identity, as the indexer computes it. */
async function registryDigest(identities: KeyIdentities, key: Buffer): Promise<string> {
  const digester = identities.digester(TOPIC);
  const out = Buffer.alloc(KEY_DIGEST_BYTES);
  digester.digestInto(key, out, 0);
  if (digester.pending) await digester.complete(out);
  return out.toString('hex');
}

function framedWith(schemaId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeInt32BE(schemaId, 1);
  return Buffer.concat([header, payload]);
}

/** What a reader from offset 0 sees: offset and value of each record. */
async function readAll(bootstrap: string, topic: string, count: number): Promise<[number, string | null][]> {
  const summary = await franzConsume(bootstrap, { topic, count, records: true, timeoutMs: 30_000 });
  return summary.records!.map((r: RecordView) => [r.offset, r.value]);
}

async function indexedUpTo(proxy: RunningCompactingProxy, topic: string, offset: number): Promise<void> {
  await pollUntil(`${topic} indexed up to ${offset}`, 60_000, async () => {
    const p = (await proxy.compaction.engine.status()).partitions.find((s) => s.topic === topic && s.partition === 0);
    return p && p.nextOffset >= offset ? true : undefined;
  });
}

/** Cleans until the partition's survivors are `expected` (tombstones go at the clean past their horizon). */
async function cleanedTo(proxy: RunningCompactingProxy, topic: string, expected: number[]): Promise<void> {
  await pollUntil(`${topic} cleaned to ${JSON.stringify(expected)}`, 30_000, async () => {
    await proxy.compactNow(topic);
    const view = proxy.compaction.engine.index.partition(topic, 0);
    return view && JSON.stringify([...view.survivors(0, view.cleanedUpTo())]) === JSON.stringify(expected) ? true : undefined;
  });
}

test('schema-aware key identity', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t, [...TEST_BED, 'schema registry'])) return;
  const lines: Record<string, unknown>[] = [];
  const previousSink = setLogSink((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  let registry: RunningSchemaRegistry | undefined;
  let kfake: RunningKfake | undefined;
  const proxies: RunningCompactingProxy[] = [];
  const dataDirs = [makeTempDir('kcompact-schema-keys-')];
  try {
    [registry, kfake] = await Promise.all([startSchemaRegistry(), startKfake({ brokers: 1 })]);
    const client = new SchemaRegistry({ host: registry.url });
    const register = async (schema: unknown, subject: string, type = SchemaType.AVRO) =>
      (
        await client.register({ type, schema: typeof schema === 'string' ? schema : JSON.stringify(schema) } as Parameters<SchemaRegistry['register']>[0], {
          subject,
        })
      ).id;
    const v1 = await register(keyV1, 'orders-key');
    const v2 = await register(keyV2, 'orders-key');
    const v3 = await register(keyV3, 'orders-key-reordered');
    assert.equal(new Set([v1, v2, v3]).size, 3, `three ids: ${[v1, v2, v3]}`);
    const K = { orderId: 'o-1', region: 'eu' };
    const K2 = { orderId: 'o-2', region: 'eu' };
    const Z = { orderId: 'o-9', region: 'us' };
    const k = { v1: await client.encode(v1, K), v2: await client.encode(v2, K), v3: await client.encode(v3, K) };
    assert.ok(k.v1.subarray(5).equals(k.v2.subarray(5)), 'v1 and v2 write the same payload');
    assert.ok(!k.v1.subarray(5).equals(k.v3.subarray(5)), 'v3 writes another payload');

    await t.test(
      'the registry identity: one digest per decoded value for Avro, JSON Schema and Protobuf keys; unknown ids and a dead registry are errors',
      async () => {
        const identities = new KeyIdentities({ [TOPIC]: 'registry' }, new RegistrySchemas(registry!.url, 5_000, quiet), quiet);
        const digest = (key: Buffer) => registryDigest(identities, key);
        const avro = await Promise.all([k.v1, k.v2, k.v3].map(digest));
        assert.equal(new Set(avro).size, 1, 'Avro: the same value under three ids');
        assert.notEqual(await digest(await client.encode(v1, K2)), avro[0]);

        const json1 = await register({ type: 'object', properties: { id: { type: 'integer' }, zone: { type: 'string' } } }, 'json-key', SchemaType.JSON);
        const json2 = await register(
          { type: 'object', title: 'Key', properties: { id: { type: 'integer' }, zone: { type: 'string' } } },
          'json-key',
          SchemaType.JSON,
        );
        assert.notEqual(json1, json2);
        const jsonKeys = [framedWith(json1, Buffer.from('{"id":7,"zone":"eu"}')), framedWith(json2, Buffer.from('{ "zone" : "eu", "id" : 7.0 }'))];
        const [j1, j2] = await Promise.all(jsonKeys.map(digest));
        assert.equal(j1, j2, 'JSON Schema: member order, spacing and 7 vs 7.0');
        assert.notEqual(await digest(framedWith(json1, Buffer.from('{"id":8,"zone":"eu"}'))), j1);

        const proto = 'syntax = "proto3";\npackage dev.kcompact.test;\nmessage Key { string id = 1; int64 n = 2; bytes tag = 3; }\n';
        const proto1 = await register(proto, 'proto-key', SchemaType.PROTOBUF);
        const proto2 = await register(proto + 'message Unrelated { string x = 1; }\n', 'proto-key-2', SchemaType.PROTOBUF);
        assert.notEqual(proto1, proto2);
        // 2^53 + 1 as protobufjs takes a 64-bit integer: high and low 32 bits.
        const pk = { id: 'x', n: { low: 1, high: 0x200000, unsigned: false }, tag: Buffer.from([1, 2]) };
        const byLibrary = await client.encode(proto1, pk);
        // Confluent's serializers put the message-index list [0] (one byte 0) before the message.
        const byConfluent = framedWith(proto2, Buffer.concat([Buffer.from([0]), byLibrary.subarray(5)]));
        assert.equal(await digest(byLibrary), await digest(byConfluent), 'Protobuf: two ids, both framings, a 64-bit integer beyond 2^53');
        assert.notEqual(
          await digest(await client.encode(proto1, { ...pk, n: { low: 0, high: 0x200000, unsigned: false } })),
          await digest(byLibrary),
          'the 64-bit integer is exact',
        );

        await assert.rejects(digest(framedWith(999_999, Buffer.from('{}'))), (err: unknown) => {
          return err instanceof SchemaUnavailableError && err.schemaId === 999_999 && err.message.includes(registry!.url);
        });
        const dead = `http://127.0.0.1:${await freePort()}/apis/ccompat/v7`;
        const unreachable = new KeyIdentities({ [TOPIC]: 'registry' }, new RegistrySchemas(dead, 2_000, quiet), quiet);
        await assert.rejects(
          registryDigest(unreachable, k.v1),
          (err: unknown) => err instanceof SchemaUnavailableError && err.schemaId === v1 && err.message.includes(dead),
        );
      },
    );

    const kafka = new kafkajs.Kafka({ clientId: 'schema-keys-test', brokers: [kfake.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await admin.connect();
    await producer.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [TOPIC, PENDING_TOPIC].map((topic) => ({ topic, numPartitions: 1 })) });
    const start = Date.now() - 60_000;
    let sent = 0;
    const produce = async (topic: string, key: Buffer, value: string | null) => {
      await producer.send({ topic, acks: -1, messages: [{ key, value, partition: 0, timestamp: String(start + 1000 * sent++) }] });
    };
    await produce(TOPIC, k.v1, 'k-1'); // 0
    await produce(TOPIC, await client.encode(v1, K2), 'k2-1'); // 1
    await produce(TOPIC, k.v2, 'k-2'); // 2
    await produce(TOPIC, k.v3, 'k-3'); // 3
    await produce(TOPIC, await client.encode(v2, K2), null); // 4: deletes K2, written under v1
    await produce(TOPIC, await client.encode(v1, Z), 'z'); // 5: the active segment
    await producer.disconnect();

    const startProxy = (keyIdentity: Record<string, 'bytes' | 'payload' | 'registry'>, dataDir?: string) =>
      startCompactingProxy(kfake!.bootstrap, { staticTopics: STATIC_TOPICS, keyIdentity, schemaRegistryUrl: registry!.url, ...(dataDir ? { dataDir } : {}) });
    const bytes = await startProxy({}, dataDirs[0]!.path);
    proxies.push(bytes);
    const payload = await startProxy({ 'schema-*': 'payload' });
    proxies.push(payload);
    const decoded = await startProxy({ 'schema-keys*': 'registry' });
    proxies.push(decoded);

    await t.test('each identity keeps its survivors, read through the proxy from offset 0; the tombstone goes after delete.retention.ms', async () => {
      const expected = {
        bytes: { first: [0, 1, 2, 3, 4, 5], last: [0, 1, 2, 3, 5] },
        payload: { first: [2, 3, 4, 5], last: [2, 3, 5] },
        registry: { first: [3, 4, 5], last: [3, 5] },
      };
      const values = ['k-1', 'k2-1', 'k-2', 'k-3', null, 'z'];
      const records = (offsets: number[]) => offsets.map((o) => [o, values[o]]);
      for (const [name, proxy] of [
        ['bytes', bytes],
        ['payload', payload],
        ['registry', decoded],
      ] as const) {
        await indexedUpTo(proxy, TOPIC, 6);
        const report = (await proxy.compactNow(TOPIC)) as { cleaned: unknown[] };
        assert.equal(report.cleaned.length, 1, `${name}: cleaned`);
        const { first, last } = expected[name];
        assert.deepEqual(
          await readAll(proxy.bootstrap, TOPIC, first.length),
          records(first),
          `${name}: after the first clean (the tombstone is kept until its horizon)`,
        );
        await cleanedTo(proxy, TOPIC, last.slice(0, -1));
        assert.deepEqual(await readAll(proxy.bootstrap, TOPIC, last.length), records(last), `${name}: after delete.retention.ms`);
      }
    });

    await t.test('a schema id the registry does not know holds indexing back, records visible, until the registry has it', async () => {
      // Apicurio hands out ids in sequence: the next schema registered gets this one.
      const probe = await register({ type: 'record', name: 'Probe', fields: [{ name: 'p', type: 'int' }] }, 'probe');
      const pending = probe + 1;
      const pendingKey = framedWith(pending, Buffer.from([2, 0x61])); // {"p": "a"} in Avro
      const late = kafka.producer({ allowAutoTopicCreation: false });
      await late.connect();
      for (const [key, value] of [
        [pendingKey, 'p-1'],
        [pendingKey, 'p-2'],
        [k.v1, 'z'],
      ] as const) {
        await late.send({ topic: PENDING_TOPIC, acks: -1, messages: [{ key, value, partition: 0, timestamp: String(start + 1000 * sent++) }] });
      }
      await late.disconnect();
      const held = await pollUntil('indexing held back with the schema id in its last error', 60_000, async () => {
        const p = (await decoded.compaction.engine.status()).partitions.find((s) => s.topic === PENDING_TOPIC);
        return p?.lastError?.includes(`schema id ${pending} `) ? p : undefined;
      });
      assert.equal(held.nextOffset, 0);
      assert.ok(held.lastError!.includes(registry!.url), held.lastError);
      const warning = lines.find(
        (l) =>
          l.msg === 'key schema not available from the schema registry; indexing of the partition waits for it (its records stay visible, unfiltered)' &&
          l.topic === PENDING_TOPIC,
      );
      assert.ok(warning, 'a warning names the partition, the id and the registry');
      assert.deepEqual([warning.partition, warning.schemaId, warning.registry], [0, pending, registry!.url]);
      await decoded.compactNow(PENDING_TOPIC);
      assert.deepEqual(
        await readAll(decoded.bootstrap, PENDING_TOPIC, 3),
        [
          [0, 'p-1'],
          [1, 'p-2'],
          [2, 'z'],
        ],
        'nothing is hidden on a guess',
      );

      assert.equal(await register({ type: 'record', name: 'Pending', fields: [{ name: 'p', type: 'string' }] }, 'pending'), pending);
      await indexedUpTo(decoded, PENDING_TOPIC, 3);
      await cleanedTo(decoded, PENDING_TOPIC, [1]);
      assert.deepEqual(await readAll(decoded.bootstrap, PENDING_TOPIC, 2), [
        [1, 'p-2'],
        [2, 'z'],
      ]);
    });

    await t.test("changing a topic's key identity rebuilds its index from the upstream", async () => {
      await bytes.stop();
      proxies.splice(proxies.indexOf(bytes), 1);
      const rebuilt = await startProxy({ [TOPIC]: 'registry' }, dataDirs[0]!.path);
      proxies.push(rebuilt);
      await pollUntil('the index reset is logged', 30_000, async () =>
        lines.some((l) => l.msg === 'resetting partition index' && l.topic === TOPIC && l.reason === 'key identity changed from bytes to registry')
          ? true
          : undefined,
      );
      await indexedUpTo(rebuilt, TOPIC, 6);
      await cleanedTo(rebuilt, TOPIC, [3]);
      assert.deepEqual(await readAll(rebuilt.bootstrap, TOPIC, 2), [
        [3, 'k-3'],
        [5, 'z'],
      ]);
    });
  } finally {
    setLogSink(previousSink);
    await Promise.all(proxies.map((p) => p.stop()));
    await Promise.all([registry?.stop(), kfake?.stop()]);
    for (const d of dataDirs) d.remove();
  }
});
