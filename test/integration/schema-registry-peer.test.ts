/**
 * The test bed's schema registry (Apicurio, Confluent-compatible API) against the npm client the
 * project uses: register, evolve, encode and decode, read schemas back by id.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { requirePeers, startSchemaRegistry } from '../support/index.js';

const keyV1 = {
  type: 'record',
  name: 'OrderKey',
  namespace: 'dev.kcompact.test',
  fields: [{ name: 'orderId', type: 'string' }],
};
// Backward-compatible: the new field has a default, so readers of v2 can read v1 data.
const keyV2 = {
  ...keyV1,
  fields: [...keyV1.fields, { name: 'region', type: 'string', default: 'eu' }],
};

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url);
  const body = await res.text();
  assert.equal(res.status, 200, `GET ${url}: ${body}`);
  return JSON.parse(body);
}

test('schema registry peer: register, encode/decode, evolve, read by id', { timeout: 120_000 }, async (t) => {
  if (!requirePeers(t, ['schema registry', 'java'])) return;
  const registry = await startSchemaRegistry();
  try {
    const client = new SchemaRegistry({ host: registry.url });
    const subject = 'orders-key';

    const { id: v1 } = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(keyV1) }, { subject });
    const encoded = await client.encode(v1, { orderId: 'o-42' });
    // Confluent wire format: magic byte 0, then the schema id as int32 big-endian.
    assert.equal(encoded[0], 0);
    assert.equal(encoded.readInt32BE(1), v1);
    assert.deepEqual({ ...(await new SchemaRegistry({ host: registry.url }).decode(encoded)) }, { orderId: 'o-42' });

    const { id: v2 } = await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(keyV2) }, { subject });
    assert.notEqual(v2, v1);
    assert.equal(await client.getLatestSchemaId(subject), v2);
    assert.deepEqual(await getJson(`${registry.url}/subjects/${subject}/versions`), [1, 2]);

    // Re-registering an existing schema returns its id instead of a new version.
    assert.equal((await client.register({ type: SchemaType.AVRO, schema: JSON.stringify(keyV1) }, { subject })).id, v1);

    const byId = (await getJson(`${registry.url}/schemas/ids/${v2}`)) as { schema: string };
    assert.deepEqual(JSON.parse(byId.schema), keyV2);

    // A fresh client (empty cache) fetches each writer schema by the id in the message.
    const reader = new SchemaRegistry({ host: registry.url });
    const encodedV2 = await client.encode(v2, { orderId: 'o-43', region: 'us' });
    assert.deepEqual({ ...(await reader.decode(encodedV2)) }, { orderId: 'o-43', region: 'us' });
    assert.deepEqual({ ...(await reader.decode(encoded)) }, { orderId: 'o-42' });
  } finally {
    await registry.stop();
  }
});
