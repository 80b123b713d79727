/**
 * The differential compaction test (issue 3, point 6) for a few seeds: Apache Kafka 4.4
 * compacts each seed's workload with its own cleaner, and kcompact, in front of Kafka with its
 * cleaner off and in front of kfake (each once without carrying, once carrying), must leave clients
 * reading exactly the same log and get the same config and error answers. The Kafka side also
 * checks itself against the model (the latest committed value of each key, nothing else), so
 * the reference is known to be fully compacted before anything is compared with it.
 * `node dist/bench/differential-long.js` runs many more seeds.
 */
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import {
  CI_SIZES,
  compactionProblems,
  compareObservations,
  describeLayout,
  kafkaReferenceTarget,
  observe,
  startKcompactTargets,
  type DifferentialTarget,
  type Observation,
} from '../support/differential.js';
import { requirePeers, startKafka, TEST_BED, type RunningKafka } from '../support/index.js';

const SEEDS = [1, 2, 3];
const SEED_TIMEOUT_MS = 120_000;

const skip = requirePeers([...TEST_BED, 'kworkload']);

let reference: RunningKafka | undefined;
let stopTargets: (() => Promise<void>) | undefined;
const candidates: DifferentialTarget[] = [];
const references = new Map<number, Promise<Observation>>();

before(async () => {
  if (skip) return;
  reference = await startKafka({ compaction: 'reference' });
  const kcompact = await startKcompactTargets();
  stopTargets = kcompact.stop;
  candidates.push(...kcompact.targets);
});

after(async () => {
  await stopTargets?.();
  await reference?.stop();
});

/** Each seed's reference observation, shared by the Kafka check and the comparisons. */
function referenceFor(seed: number, t: TestContext): Promise<Observation> {
  let o = references.get(seed);
  if (!o) {
    o = observe(kafkaReferenceTarget(reference!), { seed, sizes: CI_SIZES, log: (l) => t.diagnostic(l) });
    references.set(seed, o);
  }
  return o;
}

for (const seed of SEEDS) {
  test(`seed ${seed}: Kafka 4.4 compacts the workload down to the latest committed value of each key`, { skip, timeout: SEED_TIMEOUT_MS }, async (t) => {
    const o = await referenceFor(seed, t);
    for (const line of describeLayout(o).split('\n')) t.diagnostic(line);
    const w = o.workload.counts;
    // The workload must exercise what it claims to, or an agreement would prove little.
    assert.ok(w.tombstones! > 0 && w.emptyKeys! > 0 && w.emptyValues! > 0 && w.nullHeaderValues! > 0, `workload lacks a feature: ${JSON.stringify(w)}`);
    assert.ok(w.committedTransactions! > 0 && w.abortedTransactions! > 0, `workload lacks transactions: ${JSON.stringify(w)}`);
    assert.deepEqual(new Set(o.workload.steps.map((s) => s.codec)), new Set(['none', 'gzip', 'snappy', 'lz4', 'zstd']));
    assert.ok(o.read.uncommitted.records.length < w.records!, 'nothing was compacted away');
    assert.deepEqual(compactionProblems(o), []);
  });

  test(`seed ${seed}: kcompact leaves clients the same log and answers as Kafka`, { skip, timeout: 4 * SEED_TIMEOUT_MS }, async (t) => {
    const ref = await referenceFor(seed, t);
    // Every target has a store of its own, and most of an observation is waiting for segments to
    // roll and cleans to run, so the targets are observed side by side.
    const observed = await Promise.all(candidates.map((target) => observe(target, { seed, sizes: CI_SIZES, rounds: ref.rounds, log: (l) => t.diagnostic(l) })));
    for (const [i, target] of candidates.entries()) {
      const o = observed[i]!;
      for (const line of describeLayout(o).split('\n')) t.diagnostic(line);
      const differences = compareObservations(ref, o);
      assert.equal(differences.length, 0, `${target.name} differs from Kafka for seed ${seed}:\n${differences.join('\n')}`);
      if (target.carriedStore) {
        // An agreement proves little about carrying unless passes ran and the store let the old range go.
        assert.ok(o.carry && o.carry.passes.length > 0, `${target.name} ran no carry pass for seed ${seed}`);
        assert.ok(o.carry.store.logStart > 0, `${target.name}'s store still starts at ${o.carry.store.logStart}`);
        assert.equal(o.read.offsets.logStart, 0, 'EARLIEST through kcompact is the topic\u2019s own log start');
      }
    }
  });
}
