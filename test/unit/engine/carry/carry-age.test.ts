import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { carryMarginMs, copiesAged, oldestNeeded } from '../../../../src/engine/carry/carry-age.js';
import { carryRefusal, MIN_CARRY_WINDOW_MS, StoreRetention } from '../../../../src/compaction/config/store-retention.js';
import type { TopicPolicy } from '../../../../src/engine/api/topic-policy.js';
import { createLogger } from '../../../../src/common/log.js';
import { ProtocolError } from '../../../../src/protocol/errors.js';
import type { UpstreamClusterClient } from '../../../../src/upstream/upstream-cluster-client.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';
import type { CarryState, PartitionStore } from '../../../../src/engine/store/partition-store.js';
import type { Segment } from '../../../../src/engine/store/segment-roller.js';

const NO_PASS: CarryState = { topicStart: -1, openPass: -1, openRelease: -1, pass: -1, passEnd: -1, passRelease: -1, openTime: -1, passTime: -1 };

/** What carry-age reads of a partition index: its carry state, checkpoint and segments. */
function store(carry: Partial<CarryState>, segments: Segment[], logStartOffset = 0, nextOffset = 300): PartitionStore {
  return { carry: { ...NO_PASS, ...carry }, checkpoint: { logStartOffset, nextOffset }, segments } as unknown as PartitionStore;
}

const seg = (base: number, rollingTimestamp: number): Segment => ({ base, rollingTimestamp, maxTimestamp: rollingTimestamp + 10, bytes: 100 });

describe('carry age', () => {
  it('the oldest needed record: the first batch of each segment not yet released', () => {
    assert.equal(oldestNeeded(store({}, [seg(0, 500), seg(100, 200), seg(200, 900)])), 200, 'out of order timestamps: the least counts');
    assert.equal(oldestNeeded(store({}, [seg(0, 500), seg(100, 700)], 100)), 700, 'segments below the log start are gone');
    assert.equal(oldestNeeded(store({}, [])), undefined);
    assert.equal(oldestNeeded(store({}, [seg(0, -1)])), undefined, 'batches without timestamps say nothing');
  });

  it("the last pass's copies count with the time they were carried, and its release ends what originals are needed", () => {
    const carried = store({ pass: 250, passEnd: 260, passRelease: 200, passTime: 800 }, [seg(0, 100), seg(100, 150), seg(200, 900)]);
    assert.equal(oldestNeeded(carried), 800, 'segments below the release were carried: their originals are not needed');
    const tail = store({ pass: 250, passEnd: 260, passRelease: 100, passTime: 800 }, [seg(0, 100), seg(100, 150), seg(200, 900)]);
    assert.equal(oldestNeeded(tail), 150, 'the dirty tail past the release is older than the copies');
  });

  it('the margin is what the store retention leaves of the oldest needed record', () => {
    const s = store({}, [seg(0, 1000)]);
    assert.equal(carryMarginMs(s, 5000, 4000), 2000);
    assert.equal(carryMarginMs(s, 5000, 7000), -1000, 'negative: the store may have let it go');
    assert.equal(carryMarginMs(s, -1, 7000), undefined, 'a store that keeps everything');
  });

  it('copies age from the time of their pass, only where the store caps retention', () => {
    const s = store({ pass: 10, passTime: 1000 }, []);
    assert.equal(copiesAged(s, 4000, 4999), false);
    assert.equal(copiesAged(s, 4000, 5000), true);
    assert.equal(copiesAged(s, -1, 1e12), false);
    assert.equal(copiesAged(store({}, []), 4000, 1e12), false, 'no pass, no copies');
  });
});

describe('carryRefusal', () => {
  it('accepts a retention that leaves a carry its window, and names the numbers when it does not', () => {
    assert.equal(carryRefusal('t', 604_800_000, 0.5, 15_000), null);
    assert.equal(carryRefusal('t', -1, 0.5, 15_000), null, 'kept for ever');
    assert.equal(carryRefusal('t', 2 * MIN_CARRY_WINDOW_MS, 0.5, 1000), null, 'exactly the window');
    assert.equal(
      carryRefusal('orders', 30_000, 0.5, 15_000),
      'the store keeps the records of topic orders for retention.ms=30000; kcompact carries them at 0.5 of that (15000 ms), leaving 15000 ms before they expire ' +
        "where a carry needs 60000 ms (and 30000 ms of cleaner rounds before it): raise the store's retention, or lower carryRetentionShare / cleanerBackoffMs",
    );
    assert.match(carryRefusal('t', 99_000, 0.9, 100)!, /leaving 9900 ms/, 'the share counts');
    assert.match(carryRefusal('t', 100_000, 0.05, 3000)!, /5000 ms\), leaving/, 'too few rounds before the carry age');
  });

  it('refuses a min.compaction.lag.ms that keeps records from being cleaned before half the carry age', () => {
    assert.equal(carryRefusal('t', 600_000, 0.5, 1000, 150_000), null);
    assert.match(carryRefusal('t', 600_000, 0.5, 1000, 150_001)!, /^topic t has min\.compaction\.lag\.ms=150001.*within 150000 ms/);
  });
});

describe('StoreRetention', () => {
  const described = (values: Record<string, string>) => ({
    any: async () => ({
      version: () => 4,
      request: async () => ({
        throttleTimeMs: 0,
        results: Object.entries(values).map(([resourceName, value]) => ({
          errorCode: 0,
          errorMessage: null,
          resourceType: 2,
          resourceName,
          configs: [{ name: 'retention.ms', value, readOnly: false, configSource: 1, isSensitive: false, synonyms: [] }],
        })),
      }),
    }),
  });
  const log = createLogger({ component: 'test' });

  it("gives a policy the store's retention and the carry age, where the store imposes it", async () => {
    const links = described({ capped: '600000', forever: '-1', own: '86400000', shorter: '3600000' });
    const r = new StoreRetention({ links: links as unknown as UpstreamClusterClient, log, share: 0.5 });
    assert.equal(await r.refresh(['capped', 'forever', 'own', 'shorter']), true);
    assert.deepEqual(pick(r.apply('capped', DEFAULT_POLICY)), [600_000, 300_000]);
    assert.deepEqual(pick(r.apply('forever', DEFAULT_POLICY)), [-1, -1]);
    const compactDelete = { ...DEFAULT_POLICY, delete: true, retentionMs: 86_400_000 };
    assert.deepEqual(pick(r.apply('own', compactDelete)), [-1, -1], "a compact,delete topic's own retention expires as the topic says");
    assert.deepEqual(pick(r.apply('shorter', compactDelete)), [3_600_000, 1_800_000], 'a store shorter than the topic is carried against');
    assert.equal(await r.refresh(['capped', 'forever', 'own', 'shorter']), false, 'nothing changed');
  });

  it('takes storeRetentionMs where the store cannot describe configs', async () => {
    const links = {
      any: async () => ({
        version: () => {
          throw new ProtocolError('DescribeConfigs is not supported');
        },
      }),
    };
    const r = new StoreRetention({ links: links as unknown as UpstreamClusterClient, log, share: 0.25, fallbackMs: 604_800_000 });
    assert.deepEqual(pick(r.apply('t', DEFAULT_POLICY)), [-1, -1], 'before it asked');
    assert.equal(await r.refresh(['t']), true);
    assert.deepEqual(pick(r.apply('t', DEFAULT_POLICY)), [604_800_000, 151_200_000]);
  });
});

const pick = (p: TopicPolicy) => [p.storeRetentionMs, p.carryAfterMs];
