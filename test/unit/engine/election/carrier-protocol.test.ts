import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeCarrierAssignment,
  decodeCarrierMetadata,
  encodeCarrierAssignment,
  encodeCarrierMetadata,
} from '../../../../src/engine/election/carrier-protocol.js';
import { ProtocolError } from '../../../../src/protocol/errors.js';

const owned = [
  { topic: 'orders', partition: 0 },
  { topic: 'orders', partition: 7 },
  { topic: '__kcompact_configs', partition: 0 },
];

test('metadata and assignments round-trip', () => {
  for (const m of [
    { generation: -1, owned: [] },
    { generation: 42, owned },
  ])
    assert.deepEqual(decodeCarrierMetadata(encodeCarrierMetadata(m)), m);
  for (const carried of [[], owned]) assert.deepEqual(decodeCarrierAssignment(encodeCarrierAssignment(carried)), carried);
  assert.deepEqual(decodeCarrierAssignment(Buffer.alloc(0)), [], 'a member the leader gave nothing');
});

test('a later version\u2019s appended fields are ignored; a broken one is a ProtocolError', () => {
  const later = Buffer.concat([encodeCarrierMetadata({ generation: 3, owned }), Buffer.from([1, 2, 3])]);
  later.writeInt16BE(1, 0);
  assert.deepEqual(decodeCarrierMetadata(later), { generation: 3, owned });
  const whole = encodeCarrierAssignment(owned);
  for (let cut = 1; cut < whole.length; cut++) {
    assert.throws(() => decodeCarrierAssignment(whole.subarray(0, cut)), ProtocolError, `cut at ${cut}`);
  }
  const negative = encodeCarrierAssignment(owned);
  negative.writeInt16BE(-1, 0);
  assert.throws(() => decodeCarrierAssignment(negative), ProtocolError);
});
