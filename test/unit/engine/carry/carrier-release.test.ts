import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Carrier } from '../../../../src/engine/carry/carrier.js';
import { CarryPacing } from '../../../../src/engine/carry/carry-pacing.js';
import { createLogger } from '../../../../src/common/log.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';
import { emptyPartition, FakeClock, passBroker, type Sent } from './fake-store.js';
import { ManualClock } from '../../../support/manual-clock.js';

const log = createLogger({ component: 'test' });

/** A first pass against a store answering DeleteRecords as given; then the cleaner cleans on past the pass. */
async function afterFirstPass(deleteRecords: 'unlisted' | number) {
  const clock = new FakeClock();
  const sent: Sent[] = [];
  const { store, registry, raw } = emptyPartition();
  const client = passBroker(clock, sent, raw, [], deleteRecords);
  const carrier = new Carrier({
    registry,
    leader: async () => client,
    log,
    clock: new ManualClock(10_000),
    pacing: new CarryPacing({ bytesPerSecond: 0, clock }),
  });
  const outcome = await carrier.carry(store, DEFAULT_POLICY);
  assert.equal(outcome?.released, false, 'nothing was let go');
  raw.checkpoint = { ...raw.checkpoint, firstDirty: 200, nextOffset: 210 };
  return { carrier, store, raw, sent };
}

describe('Carrier: a store that cannot delete records', () => {
  for (const [why, answer] of [
    ['does not offer DeleteRecords', 'unlisted'],
    ['denies it (an ACL)', ErrorCode.TOPIC_AUTHORIZATION_FAILED],
  ] as const) {
    it(`${why}: no more passes where they would only add copies`, async () => {
      const { carrier, store, raw } = await afterFirstPass(answer);
      assert.equal(carrier.due(store, DEFAULT_POLICY), false, 'the store keeps everything: a pass frees nothing');
      // A store that caps retention lets the originals go: aged copies are written again, or keys go with them.
      raw.carry = { ...raw.carry, passTime: 0 };
      assert.equal(carrier.due(store, { ...DEFAULT_POLICY, carryAfterMs: 5_000 }), true);
      assert.equal(carrier.due(store, { ...DEFAULT_POLICY, carryAfterMs: 60_000 }), false, 'copies not aged yet');
    });
  }

  it('a refusal that may pass (the leader moved) leaves passes due, and the next one asks again', async () => {
    const { carrier, store, sent } = await afterFirstPass(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    assert.ok(sent.some((s) => s.apiKey === ApiKey.DeleteRecords));
    assert.equal(carrier.due(store, DEFAULT_POLICY), true);
  });
});
