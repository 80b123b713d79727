/**
 * The scale benchmark (bench/scale.ts) at a tiny size: proves it runs end to end against Kafka
 * 4.4 and that its invariants hold (every partition indexed, one index row and one record read
 * per live key, the compacted view reading as many records as Kafka's own compacted topic, a
 * soak that samples). No figure is judged here: performance belongs to `make bench-scale`.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Invariants } from '../../bench/scale-check.js';
import type { ReadResult } from '../../bench/compaction-read.js';
import type { SoakResult } from '../../bench/scale-soak.js';
import { makeTempDir, requirePeers, runProcess, tail } from '../support/index.js';

const benchPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bench/scale.js');

const skip = requirePeers(['Kafka jars', 'java', 'kbench']);

test('the scale benchmark runs at a tiny size and its invariants hold', { skip, timeout: 240_000 }, async () => {
  const dir = makeTempDir('kcompact-bench-scale-');
  try {
    const json = path.join(dir.path, 'scale.json');
    const args = [
      benchPath,
      '--partitions',
      '20',
      '--topics',
      '2',
      '--keys',
      '20000',
      '--traffic-records',
      '5000',
      '--read-rounds',
      '1',
      '--soak-minutes',
      '0.17',
      '--soak-warm-up-minutes',
      '0.05',
      '--sample-seconds',
      '2',
      '--bootstrap-every',
      '4',
      '--index-dir',
      dir.path,
      '--json',
      json,
    ];
    const run = await runProcess(process.execPath, args, { timeoutMs: 200_000 });
    assert.equal(run.code, 0, `bench exited ${run.code ?? run.signal}\nstdout: ${tail(run.stdout)}\nstderr: ${tail(run.stderr)}`);
    const r = JSON.parse(fs.readFileSync(json, 'utf8')) as { invariants: Invariants; reads: ReadResult; soak: SoakResult };

    const inv = r.invariants;
    assert.deepEqual(inv.problems, []);
    // One partition goes to the read sample, the rest to the two bulk topics.
    assert.equal(inv.partitions, 19);
    assert.equal(inv.indexedPartitions, 19);
    assert.equal(inv.indexRows, inv.expectedRows);
    assert.equal(inv.reads.length, 2);
    for (const read of inv.reads) {
      assert.equal(read.result.records, read.expected, read.topic);
      assert.equal(read.result.distinctKeys, read.expected, read.topic);
    }
    assert.equal(
      inv.reads.reduce((n, x) => n + x.expected, 0),
      20_000 - 1000 + 19,
    );

    const view = r.reads.runs.filter((x) => x.target === 'view').map((x) => x.records);
    const kafka = r.reads.runs.filter((x) => x.target === 'kafka').map((x) => x.records);
    assert.deepEqual(view, kafka);
    // The sample's 1,000 keys and its roll record.
    assert.deepEqual(view, [1001]);

    assert.ok(r.soak.samples.length >= 3, `${r.soak.samples.length} soak samples`);
    // Sampled through the warm-up (3 s) and the judged stretch (10.2 s) after it.
    assert.ok(r.soak.samples.at(-1)!.at >= 13, `last sample at ${r.soak.samples.at(-1)!.at} s`);
    assert.match(run.stdout, /after 3\.0 s of warm-up/);
    const spaces = r.soak.samples[0]!.heapSpaces;
    assert.ok(spaces.main.new_space! > 0 && spaces.main.old_space! > 0 && spaces.worker.old_space! > 0, JSON.stringify(spaces));
    assert.ok(r.soak.producers.every((p) => p.records > 0));
    assert.ok(r.soak.bootstraps.length >= 1);
    assert.match(run.stdout, /invariants: OK/);
  } finally {
    dir.remove();
  }
});
