import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeStoredTopic, encodeStoredTopic } from '../../../../src/compaction/config/stored-topic.js';

test('stored topics round-trip as JSON; null stays null', () => {
  const t = { topicId: 'XhzDQGnES3mzr8NT16faDw', configs: { 'cleanup.policy': ' compact , delete ' } };
  assert.deepEqual(decodeStoredTopic(encodeStoredTopic(t)), t);
  assert.deepEqual(decodeStoredTopic(encodeStoredTopic({ configs: {} })), { configs: {} });
  assert.equal(encodeStoredTopic(null), null);
  assert.equal(decodeStoredTopic(null), null);
  assert.equal(encodeStoredTopic(t)!.toString(), '{"topicId":"XhzDQGnES3mzr8NT16faDw","configs":{"cleanup.policy":" compact , delete "}}');
});

test('values that are not stored topics are errors, not configs', () => {
  for (const bad of ['{', '[]', '"x"', '{"configs":[]}', '{"configs":{"a":1}}', '{"topicId":5,"configs":{}}', '{}']) {
    assert.ok(decodeStoredTopic(Buffer.from(bad)) instanceof Error, bad);
  }
});
