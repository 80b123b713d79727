/*
 * The differential compaction test over many seeds and larger workloads, on demand:
 *
 *   node dist/bench/differential-long.js [--seeds 20] [--first-seed 1000] [--steps 120]
 *     [--keys 80] [--max-batch 40] [--max-value-bytes 16384] [--json FILE]
 *
 * For each seed, Apache Kafka 4.4 compacts the workload itself and must match the model (the
 * latest committed value of each key); then kcompact, in front of Kafka with its cleaner off and
 * in front of kfake, must leave clients the same log and answers (test/support/differential.ts).
 * One line per seed and target; the differences in full at the end. Exits 1 when any seed failed.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import {
  compactionProblems,
  compareObservations,
  describeLayout,
  kafkaReferenceTarget,
  kworkloadMissing,
  observe,
  startKcompactTargets,
  type DifferentialTarget,
  type WorkloadSizes,
} from '../test/support/differential.js';
import { missingPeers, startKafka, type RunningKafka } from '../test/support/index.js';
import { printHelpAndExit } from './bench-help.js';
import { numberFlags } from './number-flag.js';

const OPTIONS = {
  seeds: { type: 'string', default: '20' },
  'first-seed': { type: 'string', default: '1000' },
  steps: { type: 'string', default: '120' },
  keys: { type: 'string', default: '80' },
  'max-batch': { type: 'string', default: '40' },
  'max-value-bytes': { type: 'string', default: '16384' },
  json: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  seeds: 'workloads to run, one per seed',
  'first-seed': 'the first seed; the rest follow it',
  steps: 'steps (produce, transaction, clean) per workload',
  keys: 'distinct keys per workload',
  'max-batch': 'most records per produced batch',
  'max-value-bytes': 'largest value',
  json: 'also write every result to this file',
  help: 'print the flags',
};

const { values: args } = parseArgs({ options: OPTIONS });
if (args.help) printHelpAndExit('node dist/bench/differential-long.js [flags]', OPTIONS, HELP);

const number = numberFlags(args);
const seeds = number('seeds');
const firstSeed = number('first-seed', { min: 0 });
const sizes: WorkloadSizes = { steps: number('steps'), keys: number('keys'), maxBatch: number('max-batch'), maxValueBytes: number('max-value-bytes') };

interface SeedResult {
  seed: number;
  target: string;
  ok: boolean;
  seconds: number;
  survivors: number;
  rounds: number;
  problems: string[];
}

async function main(): Promise<number> {
  const missing = [...missingPeers(), ...(kworkloadMissing() ? ['kworkload'] : [])];
  if (missing.length) {
    console.error(`test peers not installed (${missing.join(', ')}): run bash test/peers/install.sh`);
    return 2;
  }
  let reference: RunningKafka | undefined;
  let stopTargets: (() => Promise<void>) | undefined;
  const results: SeedResult[] = [];
  try {
    reference = await startKafka({ compaction: 'reference' });
    const kcompact = await startKcompactTargets();
    stopTargets = kcompact.stop;
    const candidates: DifferentialTarget[] = kcompact.targets;
    console.log(`${seeds} seeds from ${firstSeed}, workload ${JSON.stringify(sizes)}, targets: kafka-4.4${candidates.map((c) => `, ${c.name}`).join('')}`);

    for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
      const t0 = Date.now();
      const ref = await observe(kafkaReferenceTarget(reference), { seed, sizes });
      const refProblems = compactionProblems(ref);
      results.push(record(seed, ref.target, t0, ref.read.uncommitted.records.length, ref.rounds, refProblems));
      if (refProblems.length) console.log(describeLayout(ref));
      for (const target of candidates) {
        const t1 = Date.now();
        const o = await observe(target, { seed, sizes, rounds: ref.rounds });
        results.push(record(seed, target.name, t1, o.read.uncommitted.records.length, o.rounds, compareObservations(ref, o)));
      }
    }
  } finally {
    await stopTargets?.();
    await reference?.stop();
  }

  const failed = results.filter((r) => !r.ok);
  for (const r of failed) console.log(`\nseed ${r.seed}, ${r.target}:\n${r.problems.join('\n')}`);
  const targets = [...new Set(results.map((r) => r.target))];
  console.log(
    `\n${targets.map((t) => `${t}: ${results.filter((r) => r.target === t && r.ok).length}/${results.filter((r) => r.target === t).length} seeds pass`).join('; ')}`,
  );
  if (args.json) fs.writeFileSync(args.json, JSON.stringify({ sizes, results }, null, 2));
  return failed.length ? 1 : 0;
}

function record(seed: number, target: string, t0: number, survivors: number, rounds: number, problems: string[]): SeedResult {
  const r = { seed, target, ok: problems.length === 0, seconds: (Date.now() - t0) / 1000, survivors, rounds, problems };
  const verdict = r.ok ? 'ok' : `${problems.length} problem${problems.length === 1 ? '' : 's'}`;
  console.log(`seed ${seed} ${target.padEnd(18)} ${verdict.padEnd(12)} ${survivors} records left after ${rounds} rounds, ${r.seconds.toFixed(1)} s`);
  return r;
}

process.exitCode = await main();
