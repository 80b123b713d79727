import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate } from 'node:timers/promises';
import { Carrier, type CarryMandate } from '../../../../src/engine/carry/carrier.js';
import { CarryPacing, TokenBucket } from '../../../../src/engine/carry/carry-pacing.js';
import { RUN_BYTES } from '../../../../src/protocol/carry/carried-batch.js';
import { createLogger } from '../../../../src/common/log.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';
import { deleteRecordsBefore, fetchRecords, produceBatch } from '../../../../src/engine/indexer/partition-requests.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { emptyPartition, FakeClock, fakeBroker, passBroker, type Sent } from './fake-store.js';
import { ManualClock } from '../../../support/manual-clock.js';

const never = new AbortController().signal;

describe('TokenBucket', () => {
  it('lets a second of the rate through at once, then paces to the rate', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1000, clock);
    assert.equal(await bucket.take(1000, never), 0, 'a full bucket: no wait');
    assert.equal(await bucket.take(500, never), 500);
    assert.equal(await bucket.take(250, never), 250);
    assert.deepEqual(clock.slept, [500, 250]);
  });

  it('holds the average over many takes of any size', async () => {
    const clock = new FakeClock();
    const rate = 4096;
    const bucket = new TokenBucket(rate, clock);
    const start = clock.now();
    let taken = 0;
    for (let i = 0; i < 200; i++) {
      const n = [100, 5000, 1, 40_000, 777][i % 5]!;
      await bucket.take(n, never);
      taken += n;
      const elapsed = clock.now() - start;
      assert.ok(taken <= rate + (rate * elapsed) / 1000 + 40_000, `at most a burst and one take ahead of the rate (${taken} bytes in ${elapsed} ms)`);
    }
    const elapsed = clock.now() - start;
    assert.ok(taken - rate <= (rate * elapsed) / 1000 + 40_000, 'the whole run within the rate');
    assert.ok(elapsed >= ((taken - rate - 40_000) * 1000) / rate, 'and no slower than needed');
  });

  it('a take above the burst waits for a full bucket and leaves a debt the next take waits out', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1000, clock);
    await bucket.take(600, never);
    assert.equal(await bucket.take(3000, never), 600, 'waits until the bucket is full again, not for 3000 bytes');
    assert.equal(bucket.delayMs(0), 2000, 'then owes two seconds');
    assert.equal(await bucket.take(1, never), 2001);
  });

  it('a charge after the fact (a read) is waited out by the next take, and an idle bucket fills to one second only', async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1000, clock);
    bucket.charge(3500);
    assert.equal(await bucket.take(0, never), 2500);
    clock.t += 60_000;
    assert.equal(bucket.delayMs(1000), 0);
    assert.equal(bucket.delayMs(1001), 0, 'more than the burst waits only for a full bucket');
    await bucket.take(1000, never);
    assert.equal(bucket.delayMs(1), 1, 'a minute idle gave one second, no more');
  });

  it('refuses a rate that is not positive', () => {
    assert.throws(() => new TokenBucket(0, new FakeClock()), RangeError);
  });
});

const target = { topic: 't', topicId: '', partition: 0 };

describe('CarryPacing: the store throttle', () => {
  it("waits out a Produce answer's throttle_time_ms before the next request to that broker, not to another", async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const pacing = new CarryPacing({ bytesPerSecond: 0, clock });
    const b1 = pacing.over(fakeBroker(1, clock, sent, { throttles: [250] }));
    const b2 = pacing.over(fakeBroker(2, clock, sent));
    assert.equal(await produceBatch(b1, 't', 0, Buffer.alloc(10)), 7);
    await produceBatch(b2, 't', 0, Buffer.alloc(10));
    assert.equal(clock.now(), 1_000, 'another broker is not held');
    await fetchRecords(b1, target, 0, 1 << 20);
    assert.deepEqual(
      sent.map((s) => [s.broker, s.apiKey, s.at]),
      [
        ['store:1', ApiKey.Produce, 1_000],
        ['store:2', ApiKey.Produce, 1_000],
        ['store:1', ApiKey.Fetch, 1_250],
      ],
    );
    await fetchRecords(b1, target, 0, 1 << 20);
    assert.equal(sent[3]!.at, 1_250, 'once waited out, the throttle is over');
    assert.deepEqual(pacing.stats, { pacedMsTotal: 0, throttledMsTotal: 250, throttlesTotal: 1 });
  });

  it('honors Fetch and DeleteRecords throttles too, and a new connection to the same broker waits as well', async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const pacing = new CarryPacing({ bytesPerSecond: 0, clock });
    await fetchRecords(pacing.over(fakeBroker(1, clock, sent, { throttles: [100] })), target, 0, 1000);
    await deleteRecordsBefore(pacing.over(fakeBroker(1, clock, sent, { throttles: [300] })), 't', 0, 5);
    await produceBatch(pacing.over(fakeBroker(1, clock, sent)), 't', 0, Buffer.alloc(1));
    assert.deepEqual(
      sent.map((s) => s.at),
      [1_000, 1_100, 1_400],
    );
    assert.equal(pacing.stats.throttlesTotal, 2);
  });

  it('does not wait again where the broker delayed its answer by the throttle itself (before KIP-219)', async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const pacing = new CarryPacing({ bytesPerSecond: 0, clock });
    const old = pacing.over(fakeBroker(1, clock, sent, { throttles: [500, 500], versions: { [ApiKey.Produce]: 5, [ApiKey.Fetch]: 7 } }));
    await produceBatch(old, 't', 0, Buffer.alloc(1));
    await fetchRecords(old, target, 0, 1000);
    await produceBatch(old, 't', 0, Buffer.alloc(1));
    assert.deepEqual(clock.slept, []);
    assert.equal(pacing.stats.throttlesTotal, 0);
  });

  it('of two answers in flight at once, the later end of their throttles holds', async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const pacing = new CarryPacing({ bytesPerSecond: 0, clock });
    const b = pacing.over(fakeBroker(1, clock, sent, { throttles: [400, 200] }));
    await Promise.all([produceBatch(b, 't', 0, Buffer.alloc(1)), produceBatch(b, 't', 0, Buffer.alloc(1))]);
    await produceBatch(b, 't', 0, Buffer.alloc(1));
    assert.deepEqual(
      sent.map((s) => s.at),
      [1_000, 1_000, 1_400],
    );
  });
});

describe('CarryPacing: carryBytesPerSecond', () => {
  it('paces what passes write, whatever the partition, at one shared rate', async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const pacing = new CarryPacing({ bytesPerSecond: 10_000, clock });
    const a = pacing.over(fakeBroker(1, clock, sent));
    const b = pacing.over(fakeBroker(2, clock, sent));
    for (let i = 0; i < 10; i++) await produceBatch(i % 2 ? a : b, 't', i, Buffer.alloc(5_000));
    // The bucket holds a tenth of a second: the first batch goes at once and leaves a debt, each
    // of the others waits for its own bytes, half a second.
    assert.deepEqual(
      sent.map((s) => s.at - 1_000),
      [0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500],
    );
    assert.equal(pacing.stats.pacedMsTotal, 4500);
  });

  it('charges what a read brought back, and the next read waits it out', async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const pacing = new CarryPacing({ bytesPerSecond: 1000, clock });
    const b = pacing.over(fakeBroker(1, clock, sent, { fetchBytes: 3000 }));
    await fetchRecords(b, target, 0, pacing.readBytes(4 << 20));
    await fetchRecords(b, target, 0, pacing.readBytes(4 << 20));
    // 3000 bytes charged against a bucket of 100: 2900 bytes of debt, 2.9 s at the rate.
    assert.deepEqual(
      sent.map((s) => s.at),
      [1_000, 3_900],
    );
    await produceBatch(b, 't', 0, Buffer.alloc(1000));
    assert.equal(sent[2]!.at, 3_900, 'writes have a budget of their own');
  });

  it('a read asks for about a tenth of a second of the rate, at least 4 KiB, at most what the pass asks', () => {
    const clock = new FakeClock();
    assert.equal(new CarryPacing({ bytesPerSecond: 0, clock }).readBytes(4 << 20), 4 << 20);
    assert.equal(new CarryPacing({ bytesPerSecond: 1000, clock }).readBytes(4 << 20), 4096);
    assert.equal(new CarryPacing({ bytesPerSecond: 1 << 20, clock }).readBytes(4 << 20), 104_857);
    assert.equal(new CarryPacing({ bytesPerSecond: 1 << 30, clock }).readBytes(4 << 20), 4 << 20);
  });

  it('a paced pass cuts its runs of copies to about one burst, at least 4 KiB, at most the unpaced run', () => {
    const clock = new FakeClock();
    assert.equal(new CarryPacing({ bytesPerSecond: 0, clock }).runBytes(), RUN_BYTES);
    assert.equal(new CarryPacing({ bytesPerSecond: 1000, clock }).runBytes(), 4096);
    assert.equal(new CarryPacing({ bytesPerSecond: 256 * 1024, clock }).runBytes(), 26_214);
    assert.equal(new CarryPacing({ bytesPerSecond: 1 << 30, clock }).runBytes(), RUN_BYTES);
  });

  it('throttle first, then the budget, then the check before sending', async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const pacing = new CarryPacing({ bytesPerSecond: 1000, clock });
    const checked: number[] = [];
    const b = pacing.over(fakeBroker(1, clock, sent, { throttles: [300] }), async () => {
      checked.push(clock.now());
    });
    await produceBatch(b, 't', 0, Buffer.alloc(1000));
    await produceBatch(b, 't', 0, Buffer.alloc(1000));
    assert.deepEqual(clock.slept, [300, 700], 'the throttle, then what the budget still lacks');
    assert.deepEqual(checked, [1_000, 2_000], 'checked after the waits');
    assert.deepEqual(
      sent.map((s) => s.at),
      [1_000, 2_000],
    );
  });

  it('a check that fails after the wait keeps the request from going', async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const pacing = new CarryPacing({ bytesPerSecond: 1000, clock });
    let carrier = true;
    const b = pacing.over(fakeBroker(1, clock, sent), async () => {
      if (!carrier) throw new Error('not the carrier');
    });
    await produceBatch(b, 't', 0, Buffer.alloc(1000));
    carrier = false;
    await assert.rejects(produceBatch(b, 't', 0, Buffer.alloc(1000)), /not the carrier/);
    assert.equal(sent.length, 1);
  });

  it('close ends every wait at once, so a stopping replica is not held up by its budget', async () => {
    const sent: Sent[] = [];
    const clock = new ManualClock(0);
    const pacing = new CarryPacing({ bytesPerSecond: 1, clock });
    const b = pacing.over(fakeBroker(1, clock, sent));
    await produceBatch(b, 't', 0, Buffer.alloc(1));
    const waiting = produceBatch(b, 't', 0, Buffer.alloc(1));
    await setImmediate();
    assert.equal(clock.pending, 1, 'the second batch waits for its budget');
    pacing.close();
    await waiting;
    assert.equal(clock.now(), 0, 'not the second the rate asks');
    assert.equal(sent.length, 2);
  });
});

describe('Carrier: every request of a pass goes through the pacing', () => {
  const log = createLogger({ component: 'test' });

  it("honors the store's throttle_time_ms between the steps of a pass", async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const { store, registry, raw } = emptyPartition();
    const client = passBroker(clock, sent, raw, [300, 0, 400]);
    const carrier = new Carrier({ registry, leader: async () => client, log, pacing: new CarryPacing({ bytesPerSecond: 0, clock }) });
    const outcome = await carrier.carry(store, DEFAULT_POLICY);
    assert.equal(outcome?.released, true);
    assert.deepEqual(
      sent.map((s) => [s.apiKey, s.at]),
      [
        [ApiKey.Produce, 1_000],
        [ApiKey.Produce, 1_300],
        [ApiKey.DeleteRecords, 1_300],
      ],
      'the start marker asked for 300 ms: the end marker waited them out',
    );
    assert.deepEqual(carrier.stats.pacing, { pacedMsTotal: 0, throttledMsTotal: 300, throttlesTotal: 2 });
  });

  it('a carrier that loses the partition while it waits for its budget sends nothing more', async () => {
    const clock = new FakeClock();
    const sent: Sent[] = [];
    const { store, registry, raw } = emptyPartition();
    const mandate: CarryMandate & { holding: boolean } = { holding: true, holds: () => mandate.holding, confirm: async () => true };
    // The rebalance comes while the pass sleeps for its budget.
    const sleep = clock.sleep.bind(clock);
    clock.sleep = async (ms, signal) => {
      mandate.holding = false;
      await sleep(ms, signal);
    };
    const carrier = new Carrier({
      registry,
      leader: async () => passBroker(clock, sent, raw, []),
      log,
      mandate,
      pacing: new CarryPacing({ bytesPerSecond: 50, clock }),
    });
    assert.equal(await carrier.carry(store, DEFAULT_POLICY), undefined);
    assert.deepEqual(
      sent.map((s) => s.apiKey),
      [ApiKey.Produce],
      'the start marker only: the end marker waited, and was not sent',
    );
    assert.equal(carrier.stats.fencedTotal, 1);
    assert.equal(carrier.stats.failuresTotal, 0);
  });
});
