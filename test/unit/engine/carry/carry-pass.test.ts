/**
 * A pass's wait for its end marker to be read back, on a manual clock: it polls on the carrier's
 * clock, gives up after readBackMs of it, and stops (fenced) when the partition is taken away
 * meanwhile, before anything is let go.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Carrier, type CarryMandate } from '../../../../src/engine/carry/carrier.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import type { UpstreamClient } from '../../../../src/upstream/client.js';
import { capturingLogger } from '../../../support/capturing-logger.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';
import { ManualClock } from '../../../support/manual-clock.js';
import { emptyPartition, fakeBroker, producingFrom100, type Sent } from './fake-store.js';

const log = capturingLogger([]);

/** A broker whose Produce answers offsets 100, 101, ...; `readBack` runs when the end marker (the second) is written. */
function broker(clock: ManualClock, sent: Sent[], readBack: () => void): UpstreamClient {
  return producingFrom100(fakeBroker(1, clock, sent), readBack);
}

describe('CarryPass: the read-back', () => {
  it('waits on the carrier’s clock until the index has read the end marker, then lets the range go', async () => {
    const clock = new ManualClock(0);
    const sent: Sent[] = [];
    const { store, registry, raw } = emptyPartition();
    const client = broker(clock, sent, () => {
      void clock.sleep(300).then(() => (raw.carry = { ...raw.carry, pass: 100, passEnd: 101, passRelease: 50 }));
    });
    const carrier = new Carrier({ registry, leader: async () => client, log, clock });
    const outcome = await clock.drive(carrier.carry(store, DEFAULT_POLICY), 10);
    assert.equal(outcome?.released, true);
    assert.ok(clock.now() >= 300, `read back at ${clock.now()}`);
    assert.ok(clock.slept.filter((ms) => ms === 20).length >= 300 / 20, 'polled every 20 ms of the clock meanwhile');
    assert.deepEqual(
      sent.map((s) => [s.apiKey, s.at]),
      [
        [ApiKey.Produce, 0],
        [ApiKey.Produce, 0],
        [ApiKey.DeleteRecords, clock.now()],
      ],
      'the range goes once the pass was read back, not before',
    );
  });

  it('gives up after readBackMs of the clock, letting nothing go', async () => {
    const clock = new ManualClock(0);
    const sent: Sent[] = [];
    const { store, registry } = emptyPartition();
    const carrier = new Carrier({ registry, leader: async () => broker(clock, sent, () => undefined), log, clock, readBackMs: 5_000 });
    await assert.rejects(clock.drive(carrier.carry(store, DEFAULT_POLICY), 100), /did not read the pass ending back within 5000 ms/);
    assert.ok(clock.now() >= 5_000);
    assert.equal(carrier.stats.failuresTotal, 1);
    assert.ok(!sent.some((s) => s.apiKey === ApiKey.DeleteRecords));
  });

  it('stops, fenced, when the partition is taken away while it waits', async () => {
    const clock = new ManualClock(0);
    const sent: Sent[] = [];
    const { store, registry } = emptyPartition();
    const mandate: CarryMandate & { holding: boolean } = { holding: true, holds: () => mandate.holding, confirm: async () => true };
    const client = broker(clock, sent, () => {
      void clock.sleep(1_000).then(() => (mandate.holding = false));
    });
    const carrier = new Carrier({ registry, leader: async () => client, log, clock, mandate });
    assert.equal(await clock.drive(carrier.carry(store, DEFAULT_POLICY), 50), undefined);
    assert.ok(clock.now() >= 1_000 && clock.now() < 60_000, `${clock.now()}`);
    assert.deepEqual(carrier.stats, { ...carrier.stats, fencedTotal: 1, failuresTotal: 0, passesTotal: 0 });
    assert.ok(!sent.some((s) => s.apiKey === ApiKey.DeleteRecords));
  });
});
