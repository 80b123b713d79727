/**
 * The differential compaction test (issue 3, point 6). A seeded workload (kworkload,
 * test/peers/go/cmd/kworkload) goes to Apache Kafka 4.4, which compacts it with its own
 * cleaner, and through kcompact to a store that cannot compact; once both are fully compacted,
 * what a real client reads from offset 0 (both isolation levels), what DescribeConfigs says and
 * the errors for an invalid cleanup.policy and a keyless produce must be the same.
 *
 * Both sides write exactly the same log: the workload is drawn from the seed, each step is one
 * batch and each transaction ends before the next step, so every record and marker lands at the
 * same offset on every target. Full compaction is reached the same way on both: wait past
 * segment.ms and delete.retention.ms, append one record to roll the active segment, and let the
 * store clean (Kafka's cleaner on its own, kcompact's clean-now hook), round after round. Kafka
 * decides how many rounds it takes (until a round changes nothing); kcompact gets as many.
 *
 * A kcompact target that carries (docs/carrying.md) writes its pass records into the same log
 * after each clean, so what is appended after a pass sits later there than on Kafka: its
 * observation is moved into the reference's offsets before comparing (inReferenceOffsets).
 */
import { ErrorCode } from '../../src/protocol/errors.js';
import { ConfigResourceType } from '../../src/protocol/config-resource.js';
import fs from 'node:fs';
import path from 'node:path';
import { ApiKey } from '../../src/protocol/messages.js';
import { kafkaServerProperties, startKafka, type RunningKafka } from './kafka.js';
import { startKfake } from './kfake.js';
import { startCompactingProxy } from './kcompact.js';
import { binDir } from './paths.js';
import { pollUntil, runProcess, tail } from './processes.js';
import { askOnce } from './raw-client.js';

/** The test topic's configs, the same on every target. */
export const DIFFERENTIAL_TOPIC_CONFIGS: Readonly<Record<string, string>> = {
  'cleanup.policy': 'compact',
  'segment.ms': '500',
  'min.cleanable.dirty.ratio': '0.01',
  'delete.retention.ms': '500',
};

/** The topic configs kcompact owns (DESIGN.md, "Config handling"): compared in config answers. */
export const OWNED_TOPIC_CONFIGS = [
  'cleanup.policy',
  'delete.retention.ms',
  'min.compaction.lag.ms',
  'max.compaction.lag.ms',
  'min.cleanable.dirty.ratio',
  'segment.ms',
  'segment.bytes',
  'retention.ms',
  'retention.bytes',
] as const;

/** Broker configs that supply the defaults of the owned topic configs. */
const OWNED_SYNONYMS = new Set([
  'log.cleanup.policy',
  'log.cleaner.delete.retention.ms',
  'log.cleaner.min.compaction.lag.ms',
  'log.cleaner.max.compaction.lag.ms',
  'log.cleaner.min.cleanable.ratio',
  'log.roll.ms',
  'log.roll.hours',
  'log.segment.bytes',
  'log.retention.ms',
  'log.retention.minutes',
  'log.retention.hours',
  'log.retention.bytes',
]);

/**
 * The reference broker's settings that are synonyms of owned topic configs
 * (log.cleaner.delete.retention.ms, log.cleaner.min.cleanable.ratio): give them to kcompact as
 * its broker defaults, or DescribeConfigs' synonyms cannot match Kafka's.
 */
export function referenceBrokerDefaults(): Record<string, string> {
  const text = kafkaServerProperties({ port: 0, controllerPort: 0, logDir: '', compaction: 'reference' });
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0 && OWNED_SYNONYMS.has(line.slice(0, at))) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

export interface WorkloadSizes {
  steps: number;
  keys: number;
  maxBatch: number;
  maxValueBytes: number;
}

/** About 300 records in 40 steps: a seed takes well under a minute on every target. */
export const CI_SIZES: WorkloadSizes = { steps: 40, keys: 30, maxBatch: 15, maxValueBytes: 4096 };

/** Bytes as kworkload shows them: printable ASCII as is, anything else "hex:..."; null is null. */
export interface RecordLine {
  offset: number;
  key: string | null;
  value: string | null;
  headers: [string, string | null][];
}

export interface WrittenRecord extends RecordLine {
  txn: 'none' | 'commit' | 'abort';
}

export interface WorkloadStep {
  kind: 'plain' | 'commit' | 'abort';
  codec: string;
  records: number;
  firstOffset: number;
  lastOffset: number;
  marker?: number;
}

export interface WorkloadSummary {
  seed: number;
  steps: WorkloadStep[];
  startOffset: number;
  endOffset: number;
  counts: Record<string, number>;
  records: WrittenRecord[];
}

export interface BatchLine {
  base: number;
  last: number;
  count: number;
  codec: string;
  transactional?: boolean;
  control?: string;
  producerId: number;
  deleteHorizon?: boolean;
  bytes: number;
}

export interface LogRead {
  offsets: { logStart: number; highWatermark: number; lastStable: number };
  uncommitted: { records: RecordLine[]; reachedEnd: boolean };
  committed: { records: RecordLine[]; reachedEnd: boolean };
  batches: BatchLine[];
  abortedTransactions: { producerId: number; firstOffset: number }[];
  /** Readers starting at the last records each isolation level saw and at its end. */
  tail: TailReads;
}

/** A reader from one offset near the end, one batch per fetch (kworkload tail.go). */
export interface TailRead {
  start: number;
  fetches: number;
  records: number;
  reachedEnd: boolean;
}

export interface TailReads {
  uncommitted: TailRead[];
  committed: TailRead[];
}

export interface KeylessSummary {
  /** Per codec, each record's produce error (null: written); the third record has no key. */
  kgo: Record<string, (string | null)[]>;
  raw: { errorCode: number; errorName: string; errorMessage: string | null; recordErrors: { index: number; message: string | null }[] } | null;
  endBefore: number;
  endAfter: number;
}

export interface ConfigLine {
  name: string;
  value: string | null;
  readOnly: boolean;
  source: number;
  sensitive: boolean;
  type?: number;
  synonyms?: { name: string; value: string | null; source: number }[];
  documentation?: string | null;
}

export interface ErrorLine {
  code: number;
  message: string | null;
}

/** How a target gets its log cleaned after a roll. */
export type Cleaning =
  /** Kafka's own cleaner: wait for its checkpoint (in the broker's data dir) to pass the roll. */
  | { kind: 'kafka-cleaner'; dataDir: string }
  /** kcompact: call its clean-now hook until a read no longer changes. */
  | { kind: 'compact-now'; compactNow: () => Promise<void> };

export interface DifferentialTarget {
  name: string;
  bootstrap: string;
  cleaning: Cleaning;
  /** For a target that carries: its store's bootstrap, read directly to find the carry records. */
  carriedStore?: string;
}

export function kafkaReferenceTarget(kafka: RunningKafka): DifferentialTarget {
  return { name: 'kafka-4.4', bootstrap: kafka.bootstrap, cleaning: { kind: 'kafka-cleaner', dataDir: path.join(kafka.dir, 'data') } };
}

export function kcompactTarget(name: string, bootstrap: string, compactNow: () => Promise<unknown>, carriedStore?: string): DifferentialTarget {
  return { name, bootstrap, cleaning: { kind: 'compact-now', compactNow: async () => void (await compactNow()) }, ...(carriedStore && { carriedStore }) };
}

/** What kworkload's carried mode finds in a store, read directly. */
interface StoreCarry {
  offsets: { logStart: number; highWatermark: number; lastStable: number };
  /** Physical offsets of the carry records from the store's log start on. */
  carried: number[];
  /** Their passes' start markers. */
  passes: number[];
}

/** A carrying target's carry records, as its store held them after each round. */
export interface CarryObserved {
  /** Every carry record's physical offset, ascending. */
  offsets: number[];
  /** The passes (their start markers' offsets). */
  passes: number[];
  /** The store's own offsets at the last read: its log start is above 0 once it let a carried range go. */
  store: StoreCarry['offsets'];
}

export interface Observation {
  target: string;
  seed: number;
  topic: string;
  workload: WorkloadSummary;
  /** Offsets of the records appended to roll the active segment: roll 0, then one per round. */
  rolls: number[];
  /** Clean rounds run after roll 0. */
  rounds: number;
  read: LogRead;
  /** The owned configs in the CreateTopics answer. */
  created: ConfigLine[];
  /** The owned configs in DescribeConfigs, with synonyms and documentation. */
  described: ConfigLine[];
  invalid: { create: ErrorLine; alter: ErrorLine; partialTopic: boolean };
  keyless: KeylessSummary;
  /** Milliseconds per phase. */
  timings: Record<string, number>;
  /** Only for a target that carries. */
  carry?: CarryObserved;
  /**
   * Only for a target that carries: readers through kcompact starting at every offset of the
   * store from the first near-end reader's start to the store's end, kcompact's own records
   * between the last records and after them included.
   */
  everyStart?: TailReads;
}

export interface ObserveOptions {
  seed: number;
  sizes?: WorkloadSizes;
  /** Roll rounds to run; the reference leaves it out and runs until a round changes nothing. */
  rounds?: number;
  log?: (line: string) => void;
}

const TOPIC_RESOURCE = ConfigResourceType.TOPIC;
/** Beyond segment.ms and delete.retention.ms, so clocks and timer slack cannot make a round early. */
const ROUND_MARGIN_MS = 400;
const MIN_ROUNDS = 2;
const MAX_ROUNDS = 6;
const MAX_COMPACT_NOW_CALLS = 6;

export function kworkloadPath(): string {
  return path.join(binDir, 'kworkload');
}

/** Why kworkload cannot run here, or undefined when it can. */
export function kworkloadMissing(): string | undefined {
  return fs.existsSync(kworkloadPath()) ? undefined : `${kworkloadPath()} is missing: run bash test/peers/install.sh`;
}

async function kworkload<T>(mode: string, args: string[], timeoutMs = 90_000): Promise<T> {
  const r = await runProcess(kworkloadPath(), [mode, ...args], { timeoutMs });
  const line = r.stdout.trimEnd().split('\n').pop() ?? '';
  let parsed: (T & { errors?: string[] }) | undefined;
  try {
    parsed = JSON.parse(line) as T & { errors?: string[] };
  } catch {
    parsed = undefined;
  }
  if (r.code !== 0 || !parsed) {
    const errors = parsed?.errors?.length ? `: ${parsed.errors.join('; ')}` : '';
    throw new Error(`kworkload ${mode} ${args.join(' ')} exited ${r.code ?? r.signal}${errors}\nstderr tail:\n${tail(r.stderr)}`);
  }
  return parsed;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

interface CreatedTopic {
  name: string;
  errorCode: number;
  errorMessage: string | null;
  configs: { name: string; value: string | null; readOnly: boolean; configSource: number; isSensitive: boolean }[] | null;
}

/**
 * Where an admin client sends CreateTopics and config changes: the controller Metadata names.
 * kfake answers NOT_CONTROLLER anywhere else; Kafka's brokers would forward them.
 */
async function controllerOf(bootstrap: string): Promise<string> {
  const body = (await askOnce(bootstrap, ApiKey.Metadata, 12, { topics: [], allowAutoTopicCreation: false })) as {
    controllerId: number;
    brokers: { nodeId: number; host: string; port: number }[];
  };
  const controller = body.brokers.find((b) => b.nodeId === body.controllerId);
  if (!controller) throw new Error(`Metadata from ${bootstrap} names controller ${body.controllerId}, which is not among its brokers`);
  return `${controller.host}:${controller.port}`;
}

async function createTopic(bootstrap: string, name: string, configs: Readonly<Record<string, string>>): Promise<CreatedTopic> {
  const body = await askOnce(await controllerOf(bootstrap), ApiKey.CreateTopics, 7, {
    topics: [{ name, numPartitions: 1, replicationFactor: -1, assignments: [], configs: Object.entries(configs).map(([k, v]) => ({ name: k, value: v })) }],
    timeoutMs: 15_000,
    validateOnly: false,
  });
  return (body as { topics: CreatedTopic[] }).topics[0]!;
}

/** The topic's Metadata error code (3: it does not exist) and whether partition 0 has a leader. */
async function topicState(bootstrap: string, name: string): Promise<{ errorCode: number; led: boolean }> {
  const body = (await askOnce(bootstrap, ApiKey.Metadata, 12, { topics: [{ topicId: 'AAAAAAAAAAAAAAAAAAAAAA', name }], allowAutoTopicCreation: false })) as {
    topics: { errorCode: number; partitions: { partitionIndex: number; leaderId: number; errorCode: number }[] }[];
  };
  const t = body.topics[0]!;
  return { errorCode: t.errorCode, led: t.partitions.some((p) => p.partitionIndex === 0 && p.leaderId >= 0 && p.errorCode === 0) };
}

async function alterCleanupPolicy(bootstrap: string, topic: string, value: string): Promise<ErrorLine> {
  const body = (await askOnce(await controllerOf(bootstrap), ApiKey.IncrementalAlterConfigs, 1, {
    resources: [{ resourceType: TOPIC_RESOURCE, resourceName: topic, configs: [{ name: 'cleanup.policy', configOperation: 0, value }] }],
    validateOnly: false,
  })) as { responses: { errorCode: number; errorMessage: string | null }[] };
  const r = body.responses[0]!;
  return { code: r.errorCode, message: r.errorMessage };
}

async function describeOwned(bootstrap: string, topic: string): Promise<ConfigLine[]> {
  const body = (await askOnce(bootstrap, ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: TOPIC_RESOURCE, resourceName: topic, configurationKeys: null }],
    includeSynonyms: true,
    includeDocumentation: true,
  })) as {
    results: {
      errorCode: number;
      errorMessage: string | null;
      configs: {
        name: string;
        value: string | null;
        readOnly: boolean;
        configSource: number;
        isSensitive: boolean;
        synonyms: { name: string; value: string | null; source: number }[];
        configType: number;
        documentation: string | null;
      }[];
    }[];
  };
  const result = body.results[0]!;
  if (result.errorCode !== 0) throw new Error(`DescribeConfigs ${topic}: error ${result.errorCode} ${result.errorMessage ?? ''}`);
  return owned(result.configs).map((c) => ({
    name: c.name,
    value: c.value,
    readOnly: c.readOnly,
    source: c.configSource,
    sensitive: c.isSensitive,
    type: c.configType,
    synonyms: c.synonyms,
    documentation: c.documentation,
  }));
}

function owned<T extends { name: string }>(configs: T[] | null): T[] {
  const names: readonly string[] = OWNED_TOPIC_CONFIGS;
  return (configs ?? []).filter((c) => names.includes(c.name)).sort((a, b) => a.name.localeCompare(b.name));
}

/** Kafka's cleaner checkpoint for topic-0: the first offset its next clean starts from. */
function cleanerCheckpoint(dataDir: string, topic: string): number | undefined {
  const file = path.join(dataDir, 'cleaner-offset-checkpoint');
  if (!fs.existsSync(file)) return undefined;
  for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(2)) {
    const [t, p, o] = line.trim().split(' ');
    if (t === topic && p === '0') return Number(o);
  }
  return undefined;
}

function readLog(target: DifferentialTarget, topic: string): Promise<LogRead> {
  return kworkload<LogRead>('read', ['--brokers', target.bootstrap, '--topic', topic]);
}

function readStoreCarry(store: string, topic: string): Promise<StoreCarry> {
  return kworkload<StoreCarry>('carried', ['--brokers', store, '--topic', topic]);
}

/** Cleans after a roll at rollOffset and returns the read that follows. */
async function cleanAfterRoll(target: DifferentialTarget, topic: string, rollOffset: number): Promise<LogRead> {
  const cleaning = target.cleaning;
  if (cleaning.kind === 'kafka-cleaner') {
    await pollUntil(`Kafka's cleaner to pass offset ${rollOffset} of ${topic}-0`, 30_000, async () => {
      const at = cleanerCheckpoint(cleaning.dataDir, topic);
      return at !== undefined && at >= rollOffset ? at : undefined;
    });
    return readLog(target, topic);
  }
  // The indexer tails the upstream on its own, so one call may not have seen the roll yet:
  // clean until the log a client reads stops changing.
  await cleaning.compactNow();
  let read = await readLog(target, topic);
  for (let calls = 1; calls < MAX_COMPACT_NOW_CALLS; calls++) {
    await cleaning.compactNow();
    const next = await readLog(target, topic);
    if (JSON.stringify(next) === JSON.stringify(read)) break;
    read = next;
  }
  return read;
}

/** The batches wholly below an offset: what a round must leave alone once compaction is done. */
function layoutBelow(read: LogRead, offset: number): BatchLine[] {
  return read.batches.filter((b) => b.last < offset);
}

/** The size of the roll records: big enough that the segment one leaves behind passes min.cleanable.dirty.ratio. */
function rollValueBytes(workload: WorkloadSummary): number {
  return Math.min(256 * 1024, Math.max(1024, Math.ceil((workload.counts.valueBytes ?? 0) / 10)));
}

export async function observe(target: DifferentialTarget, opts: ObserveOptions): Promise<Observation> {
  const sizes = opts.sizes ?? CI_SIZES;
  const topic = `differential-${opts.seed}`;
  const log = (line: string) => opts.log?.(`[${target.name} seed ${opts.seed}] ${line}`);
  const timings: Record<string, number> = {};
  const timed = async <T>(phase: string, run: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    try {
      return await run();
    } finally {
      timings[phase] = Date.now() - t0;
    }
  };

  const created = await timed('create', async () => {
    const c = await createTopic(target.bootstrap, topic, DIFFERENTIAL_TOPIC_CONFIGS);
    if (c.errorCode !== 0) throw new Error(`${target.name}: CreateTopics ${topic}: error ${c.errorCode} ${c.errorMessage ?? ''}`);
    await pollUntil(`${topic}-0 to have a leader on ${target.name}`, 30_000, async () => ((await topicState(target.bootstrap, topic)).led ? true : undefined));
    return c;
  });

  const invalid = await timed('invalid-configs', async () => {
    const badTopic = `${topic}-invalid`;
    const bad = await createTopic(target.bootstrap, badTopic, { ...DIFFERENTIAL_TOPIC_CONFIGS, 'cleanup.policy': 'foo' });
    const alter = await alterCleanupPolicy(target.bootstrap, topic, 'foo');
    const state = await topicState(target.bootstrap, badTopic);
    return { create: { code: bad.errorCode, message: bad.errorMessage }, alter, partialTopic: state.errorCode !== ErrorCode.UNKNOWN_TOPIC_OR_PARTITION };
  });

  const workload = await timed('write', () =>
    kworkload<WorkloadSummary>('write', [
      '--brokers',
      target.bootstrap,
      '--topic',
      topic,
      '--seed',
      String(opts.seed),
      '--steps',
      String(sizes.steps),
      '--keys',
      String(sizes.keys),
      '--max-batch',
      String(sizes.maxBatch),
      '--max-value-bytes',
      String(sizes.maxValueBytes),
      '--records',
    ]),
  );
  log(`wrote ${workload.counts.records} records in ${workload.steps.length} steps, log end ${workload.endOffset}`);

  // Kafka only rolls a segment on an append past segment.ms, and only removes a tombstone or
  // marker in a clean that starts delete.retention.ms after the clean that first covered it.
  const pause = Math.max(Number(DIFFERENTIAL_TOPIC_CONFIGS['segment.ms']), Number(DIFFERENTIAL_TOPIC_CONFIGS['delete.retention.ms'])) + ROUND_MARGIN_MS;
  const rollBytes = rollValueBytes(workload);
  const rolls: number[] = [];
  let read: LogRead | undefined;
  let rounds = 0;
  // Read after every round: the next pass lets this one's records go from the store.
  const carried = new Set<number>();
  const passes = new Set<number>();
  let store: StoreCarry['offsets'] | undefined;
  const noteCarry = async () => {
    if (!target.carriedStore) return;
    const seen = await readStoreCarry(target.carriedStore, topic);
    for (const o of seen.carried) carried.add(o);
    for (const o of seen.passes) passes.add(o);
    store = seen.offsets;
  };
  await timed('rounds', async () => {
    const append = async (n: number) => {
      const roll = await kworkload<{ offset: number }>('append', [
        '--brokers',
        target.bootstrap,
        '--topic',
        topic,
        '--key',
        `roll-${n}`,
        '--value-bytes',
        String(rollBytes),
      ]);
      rolls.push(roll.offset);
      return roll.offset;
    };
    // Roll 0 only closes the workload's last segment, which may hold too few bytes to pass
    // min.cleanable.dirty.ratio, so nothing waits for a clean here; every later round's dirty
    // range holds the previous roll record, which is big enough.
    await sleep(pause);
    await append(0);
    let quietSince = Date.now();
    let previous: LogRead | undefined;
    for (rounds = 1; ; rounds++) {
      await sleep(quietSince + pause - Date.now());
      const at = await append(rounds);
      read = await cleanAfterRoll(target, topic, at);
      await noteCarry();
      quietSince = Date.now();
      log(`round ${rounds}: rolled at ${at}; ${summarizeRead(read)}`);
      if (opts.rounds !== undefined ? rounds >= opts.rounds : rounds >= MAX_ROUNDS) break;
      const below = rolls[rounds - 1]!;
      const settled = rounds >= MIN_ROUNDS && JSON.stringify(layoutBelow(previous!, below)) === JSON.stringify(layoutBelow(read, below));
      if (opts.rounds === undefined && settled) break;
      previous = read;
    }
  });

  const keyless = await timed('keyless', () => kworkload<KeylessSummary>('keyless', ['--brokers', target.bootstrap, '--topic', topic]));
  if (keyless.endAfter !== keyless.endBefore) read = await readLog(target, topic);
  const described = await timed('describe', () => describeOwned(target.bootstrap, topic));
  const firstStart = Math.min(...read!.tail.uncommitted.map((t) => t.start), ...read!.tail.committed.map((t) => t.start));
  const everyStart = store
    ? await kworkload<TailReads>('tail', ['--brokers', target.bootstrap, '--topic', topic, '--from', String(firstStart), '--to', String(store.highWatermark)])
    : undefined;
  return {
    target: target.name,
    seed: opts.seed,
    topic,
    workload,
    rolls,
    rounds,
    read: read!,
    created: owned(created.configs).map((c) => ({ name: c.name, value: c.value, readOnly: c.readOnly, source: c.configSource, sensitive: c.isSensitive })),
    described,
    invalid,
    keyless,
    timings,
    ...(store && { carry: { offsets: [...carried].sort((a, b) => a - b), passes: [...passes].sort((a, b) => a - b), store } }),
    ...(everyStart && { everyStart }),
  };
}

// ---- judging -------------------------------------------------------------------------------

function clip(s: string | null, width = 60): string {
  if (s === null) return 'null';
  return JSON.stringify(s.length > width ? `${s.slice(0, width)}…(${s.length})` : s);
}

function showRecord(r: RecordLine): string {
  const headers = r.headers.map(([k, v]) => `${JSON.stringify(k)}:${clip(v, 20)}`).join(',');
  return `key=${clip(r.key, 30)} value=${clip(r.value)} headers=[${headers}]`;
}

const MAX_LINES = 25;

function limited(lines: string[]): string[] {
  return lines.length <= MAX_LINES ? lines : [...lines.slice(0, MAX_LINES), `… and ${lines.length - MAX_LINES} more`];
}

/** Record differences by offset, as readable lines (empty when equal). */
export function diffRecords(expected: RecordLine[], actual: RecordLine[], names = ['expected', 'actual']): string[] {
  const a = new Map(expected.map((r) => [r.offset, r]));
  const b = new Map(actual.map((r) => [r.offset, r]));
  const offsets = [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => x - y);
  const lines: string[] = [];
  let onlyA = 0;
  let onlyB = 0;
  let changed = 0;
  for (const o of offsets) {
    const ra = a.get(o);
    const rb = b.get(o);
    if (!rb) {
      onlyA++;
      lines.push(`offset ${o}: only in ${names[0]}: ${showRecord(ra!)}`);
    } else if (!ra) {
      onlyB++;
      lines.push(`offset ${o}: only in ${names[1]}: ${showRecord(rb)}`);
    } else if (JSON.stringify(ra) !== JSON.stringify(rb)) {
      changed++;
      lines.push(`offset ${o}: ${names[0]} ${showRecord(ra)}\n           ${names[1]} ${showRecord(rb)}`);
    }
  }
  if (lines.length === 0) return [];
  const counts = `${expected.length} vs ${actual.length} records; only in ${names[0]} ${onlyA}, only in ${names[1]} ${onlyB}, different ${changed}`;
  return [counts, ...limited(lines)];
}

function diffConfigs(expected: ConfigLine[], actual: ConfigLine[], names: string[]): string[] {
  const a = new Map(expected.map((c) => [c.name, c]));
  const b = new Map(actual.map((c) => [c.name, c]));
  const lines: string[] = [];
  for (const name of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const ca = a.get(name);
    const cb = b.get(name);
    if (!ca || !cb) {
      lines.push(`${name}: only in ${ca ? names[0] : names[1]}`);
      continue;
    }
    for (const field of Object.keys({ ...ca, ...cb }) as (keyof ConfigLine)[]) {
      const va = JSON.stringify(ca[field]);
      const vb = JSON.stringify(cb[field]);
      if (va !== vb) lines.push(`${name}.${field}: ${names[0]} ${va}\n           ${names[1]} ${vb}`);
    }
  }
  return limited(lines);
}

function diffValue(what: string, a: unknown, b: unknown, names: string[]): string[] {
  const va = JSON.stringify(a);
  const vb = JSON.stringify(b);
  return va === vb ? [] : [`${what}: ${names[0]} ${va}\n           ${names[1]} ${vb}`];
}

/**
 * A carrying target's observation in the reference's offsets. Its carry records take physical
 * offsets that clients see as gaps, so whatever is appended after the first pass (the roll
 * records, the log end) sits later than on Kafka by the number of carry records below it, and
 * the store itself, read directly, says where those are: offset o becomes o minus the carry
 * records below o. Below the first pass (the whole workload) offsets stay as they are. A
 * record a client saw at a carry record's offset is a copy shown at its physical offset: a
 * problem, not something to map. The batches are left as read (they are not compared).
 */
export function inReferenceOffsets(o: Observation): { mapped: Observation; problems: string[] } {
  if (!o.carry) return { mapped: o, problems: [] };
  const carried = o.carry.offsets;
  const carriedSet = new Set(carried);
  const problems: string[] = [];
  for (const [isolation, records] of [
    ['read_uncommitted', o.read.uncommitted.records],
    ['read_committed', o.read.committed.records],
  ] as const) {
    const shown = records.filter((r) => carriedSet.has(r.offset));
    if (shown.length) problems.push(`${isolation} got records at carry records' offsets: ${shown.map((r) => `${r.offset} ${showRecord(r)}`).join('; ')}`);
  }
  // The log must not have grown past the last look at the store, or carry records could be missing.
  // Through kcompact it ends after the last record clients see: carry records at the end are not in it.
  let storeEnd = o.carry.store.highWatermark;
  while (carriedSet.has(storeEnd - 1)) storeEnd--;
  if (storeEnd !== o.read.offsets.highWatermark)
    problems.push(
      `the store ends at ${o.carry.store.highWatermark} (${storeEnd} without the carry records there), the log read through kcompact at ${o.read.offsets.highWatermark}`,
    );
  const below = (offset: number) => {
    let lo = 0;
    let hi = carried.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (carried[mid]! < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const at = (offset: number) => offset - below(offset);
  const records = (rs: RecordLine[]) => rs.map((r) => ({ ...r, offset: at(r.offset) }));
  const tails = (ts: TailRead[]) => ts.map((t) => ({ ...t, start: at(t.start) }));
  const { read, keyless } = o;
  const mapped: Observation = {
    ...o,
    rolls: o.rolls.map(at),
    read: {
      ...read,
      offsets: { logStart: at(read.offsets.logStart), highWatermark: at(read.offsets.highWatermark), lastStable: at(read.offsets.lastStable) },
      uncommitted: { ...read.uncommitted, records: records(read.uncommitted.records) },
      committed: { ...read.committed, records: records(read.committed.records) },
      tail: { uncommitted: tails(read.tail.uncommitted), committed: tails(read.tail.committed) },
    },
    ...(o.everyStart && { everyStart: { uncommitted: tails(o.everyStart.uncommitted), committed: tails(o.everyStart.committed) } }),
    keyless: { ...keyless, endBefore: at(keyless.endBefore), endAfter: at(keyless.endAfter) },
  };
  return { mapped, problems };
}

/**
 * Everything a client could tell apart between the reference and a candidate, as sections of
 * readable lines; empty when they agree. Batch layouts (markers, empty batches, producer ids)
 * are not compared: no client shows them, and kcompact is free to present them differently.
 */
export function compareObservations(reference: Observation, observed: Observation): string[] {
  const { mapped: candidate, problems: carryProblems } = inReferenceOffsets(observed);
  const names = [reference.target, candidate.target];
  const sections: [string, string[]][] = [
    ['carry records (the store read directly)', carryProblems],
    ['workload layout (steps and their offsets)', diffValue('steps', reference.workload.steps, candidate.workload.steps, names)],
    ['roll records', diffValue('offsets', reference.rolls, candidate.rolls, names)],
    ['log offsets (ListOffsets)', diffValue('offsets', reference.read.offsets, candidate.read.offsets, names)],
    ['read_uncommitted from offset 0', diffRecords(reference.read.uncommitted.records, candidate.read.uncommitted.records, names)],
    ['read_committed from offset 0', diffRecords(reference.read.committed.records, candidate.read.committed.records, names)],
    [
      'readers reaching the end',
      diffValue(
        'reachedEnd (uncommitted, committed)',
        [reference.read.uncommitted.reachedEnd, reference.read.committed.reachedEnd],
        [candidate.read.uncommitted.reachedEnd, candidate.read.committed.reachedEnd],
        names,
      ),
    ],
    ['readers from near the end (one batch a fetch)', diffTails(reference.read.tail, candidate.read.tail, names)],
    ['readers from every offset near the end, kcompact\u2019s own records among them', everyStartProblems(reference.read, candidate.everyStart, names)],
    ['CreateTopics answer (owned configs)', diffConfigs(reference.created, candidate.created, names)],
    ['DescribeConfigs (owned configs, synonyms, documentation)', diffConfigs(reference.described, candidate.described, names)],
    ['CreateTopics with cleanup.policy=foo', diffValue('error', reference.invalid.create, candidate.invalid.create, names)],
    ['IncrementalAlterConfigs cleanup.policy=foo', diffValue('error', reference.invalid.alter, candidate.invalid.alter, names)],
    ['topic left behind by the invalid CreateTopics', diffValue('exists', reference.invalid.partialTopic, candidate.invalid.partialTopic, names)],
    ['keyless produce, kgo per codec', diffValue('record errors', reference.keyless.kgo, candidate.keyless.kgo, names)],
    ['keyless produce, raw Produce v11', diffValue('answer', reference.keyless.raw, candidate.keyless.raw, names)],
    [
      'log end around the keyless attempts',
      diffValue('records added', reference.keyless.endAfter - reference.keyless.endBefore, candidate.keyless.endAfter - candidate.keyless.endBefore, names),
    ],
  ];
  return sections.filter(([, lines]) => lines.length > 0).map(([title, lines]) => `${title}:\n  ${lines.join('\n  ')}`);
}

/**
 * A reader from any of the reference's starts near the end must get the same records and reach
 * the end in no more fetches than on Kafka with its own cleaner (fewer where kcompact leaves out
 * an empty batch Kafka keeps).
 */
function diffTails(reference: TailReads, candidate: TailReads, names: string[]): string[] {
  const lines: string[] = [];
  for (const isolation of ['uncommitted', 'committed'] as const) {
    for (const r of reference[isolation]) {
      const c = candidate[isolation].find((t) => t.start === r.start);
      if (!c) lines.push(`read_${isolation} from ${r.start}: ${names[1]} has no reader there (starts ${candidate[isolation].map((t) => t.start).join(',')})`);
      else if (!c.reachedEnd || c.records !== r.records || c.fetches > r.fetches)
        lines.push(`read_${isolation} from ${r.start}: ${names[0]} ${JSON.stringify(r)}, ${names[1]} ${JSON.stringify(c)}`);
    }
  }
  return lines;
}

/**
 * A reader through kcompact from any offset near the end, inside a run of its own records or
 * just before one, against Kafka's reader from the offset that maps to (the next record there):
 * the same records in no more fetches; one past the last record clients see is at the end, in
 * one fetch without records. Offsets mapping to a gap Kafka's cleaner left have no reader to
 * compare with.
 */
function everyStartProblems(reference: LogRead, everyStart: TailReads | undefined, names: string[]): string[] {
  if (!everyStart) return [];
  const lines: string[] = [];
  for (const isolation of ['uncommitted', 'committed'] as const) {
    const end = isolation === 'uncommitted' ? reference.offsets.highWatermark : reference.offsets.lastStable;
    for (const c of everyStart[isolation]) {
      const r = reference.tail[isolation].find((t) => t.start === c.start);
      const expected = r ?? (c.start >= end ? { start: c.start, fetches: 1, records: 0, reachedEnd: true } : undefined);
      if (expected && (!c.reachedEnd || c.records !== expected.records || c.fetches > expected.fetches))
        lines.push(`read_${isolation} from (mapped) ${c.start}: ${names[0]} ${JSON.stringify(expected)}, ${names[1]} ${JSON.stringify(c)}`);
    }
  }
  return lines;
}

/** What Kafka must have left once compaction is complete: the latest committed value of each key. */
export function expectedSurvivors(o: Observation): RecordLine[] {
  const latest = new Map<string | null, WrittenRecord>();
  for (const r of o.workload.records) if (r.txn !== 'abort') latest.set(r.key, r);
  const survivors: RecordLine[] = [...latest.values()]
    .filter((r) => r.value !== null)
    .map(({ offset, key, value, headers }) => ({ offset, key, value, headers }));
  return survivors.sort((a, b) => a.offset - b.offset);
}

function isRoll(r: RecordLine): boolean {
  return r.key?.startsWith('roll-') ?? false;
}

/**
 * Problems with an observation that claims full compaction (the Kafka reference must have
 * none): aborted data or tombstones left, a key twice, anything but the latest committed value of
 * each key, a reader not reaching the end, an invalid config or keyless record accepted.
 */
export function compactionProblems(o: Observation): string[] {
  const problems: string[] = [];
  const { uncommitted, committed } = o.read;
  if (!uncommitted.reachedEnd || !committed.reachedEnd)
    problems.push(`a reader stopped short of the end (uncommitted ${uncommitted.reachedEnd}, committed ${committed.reachedEnd})`);
  const isolation = diffRecords(committed.records, uncommitted.records, ['read_committed', 'read_uncommitted']);
  if (isolation.length) problems.push(`the isolation levels disagree (aborted records left?):\n  ${isolation.join('\n  ')}`);
  const tombstones = uncommitted.records.filter((r) => r.value === null).map((r) => r.offset);
  if (tombstones.length) problems.push(`tombstones left at offsets ${tombstones.join(', ')}`);
  const seen = new Set<string | null>();
  const twice = uncommitted.records.filter((r) => (seen.has(r.key) ? true : (seen.add(r.key), false))).map((r) => r.offset);
  if (twice.length) problems.push(`keys seen more than once, again at offsets ${twice.join(', ')}`);
  const model = diffRecords(
    expectedSurvivors(o),
    uncommitted.records.filter((r) => !isRoll(r)),
    ['the latest committed writes', 'the log'],
  );
  if (model.length) problems.push(`survivors differ from the latest committed value of each key:\n  ${model.join('\n  ')}`);
  const rolls = uncommitted.records.filter(isRoll).map((r) => r.offset);
  if (JSON.stringify(rolls) !== JSON.stringify(o.rolls)) problems.push(`roll records at ${rolls.join(', ')}, appended at ${o.rolls.join(', ')}`);
  const accepted = Object.entries(o.keyless.kgo)
    .filter(([, errs]) => errs.some((e) => e === null))
    .map(([codec]) => codec);
  if (accepted.length) problems.push(`a batch with a keyless record was accepted (${accepted.join(', ')})`);
  if (o.keyless.raw?.errorCode !== ErrorCode.INVALID_RECORD)
    problems.push(`the raw keyless produce got ${JSON.stringify(o.keyless.raw)}, not INVALID_RECORD (87)`);
  if (o.keyless.endAfter !== o.keyless.endBefore) problems.push(`the keyless attempts moved the log end from ${o.keyless.endBefore} to ${o.keyless.endAfter}`);
  if (o.invalid.create.code !== 40 || o.invalid.alter.code !== 40)
    problems.push(`cleanup.policy=foo got ${JSON.stringify(o.invalid)}, not INVALID_CONFIG (40)`);
  if (o.invalid.partialTopic) problems.push('the CreateTopics with cleanup.policy=foo left a topic behind');
  const policy = o.described.find((c) => c.name === 'cleanup.policy');
  if (policy?.value !== 'compact') problems.push(`DescribeConfigs shows cleanup.policy ${JSON.stringify(policy?.value)}`);
  return problems;
}

function tally(items: string[]): string {
  const counts = new Map<string, number>();
  for (const i of items) counts.set(i, (counts.get(i) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
}

function summarizeRead(read: LogRead): string {
  const records = read.uncommitted.records;
  const batches = read.batches;
  return [
    `${records.length} records (${records.filter((r) => r.value === null).length} tombstones, ${records.length - read.committed.records.length} aborted)`,
    `${batches.length} batches (${batches.filter((b) => b.control).length} markers, ${batches.filter((b) => b.count === 0).length} empty, ${batches.filter((b) => b.deleteHorizon).length} with a delete horizon)`,
  ].join(', ');
}

function showTails(ts: TailRead[]): string {
  return ts.map((t) => `${t.start}:${t.fetches}${t.reachedEnd ? '' : ' (stuck)'}`).join(' ') || '-';
}

/** A short account of a compacted log: what survives, the batches, markers and empty batches left. */
export function describeLayout(o: Observation): string {
  const { read, workload } = o;
  const batches = read.batches;
  const markers = batches.filter((b) => b.control);
  const empty = batches.filter((b) => b.count === 0);
  const data = batches.filter((b) => !b.control);
  const keys = new Set(workload.records.map((r) => r.key)).size;
  const steps = tally(workload.steps.map((s) => s.kind));
  return [
    `${o.target}, seed ${o.seed}: wrote ${workload.counts.records} records over ${keys} keys in ${workload.steps.length} steps (${steps}), log end ${workload.endOffset}`,
    `  compacted in ${o.rounds} rounds (rolls at ${o.rolls.join(', ')}): ${read.uncommitted.records.length} records left (${read.uncommitted.records.filter(isRoll).length} of them roll records), offsets ${JSON.stringify(read.offsets)}`,
    `  ${batches.length} batches: codecs ${tally(data.map((b) => b.codec))}; ${empty.length} empty (${empty.map((b) => `${b.base}-${b.last}${b.transactional ? ' txn' : ''}`).join(', ') || 'none'}); ${batches.filter((b) => b.deleteHorizon).length} carry a delete horizon`,
    `  control batches left: ${tally(markers.map((b) => b.control!))} (empty: the marker record removed, the batch kept) at ${markers.map((b) => b.base).join(', ') || '-'}; aborted transactions listed: ${read.abortedTransactions.length}`,
    `  readers from near the end (start:fetches): uncommitted ${showTails(read.tail.uncommitted)}; committed ${showTails(read.tail.committed)}`,
    ...(o.everyStart
      ? [`  readers from every store offset from there: uncommitted ${showTails(o.everyStart.uncommitted)}; committed ${showTails(o.everyStart.committed)}`]
      : []),
    `  timings (ms): ${Object.entries(o.timings)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    ...(o.carry
      ? [
          `  carried: ${o.carry.passes.length} passes (at ${o.carry.passes.join(', ') || '-'}), ${o.carry.offsets.length} carry records; the store now starts at ${o.carry.store.logStart} and ends at ${o.carry.store.highWatermark}`,
        ]
      : []),
  ].join('\n');
}

// ---- kcompact targets ---------------------------------------------------------------------

/**
 * kcompact in front of each store without compaction (Kafka 4.4 with its cleaner off, kfake,
 * and another Kafka 4.4 with its cleaner off, where kcompact carries), as differential targets,
 * with the reference broker's cleaner defaults so DescribeConfigs synonyms match. `stop()` ends
 * the proxies and the stores.
 */
export async function startKcompactTargets(): Promise<{ targets: DifferentialTarget[]; stop(): Promise<void> }> {
  const brokerDefaults = referenceBrokerDefaults();
  const stops: (() => Promise<void>)[] = [];
  const targets: DifferentialTarget[] = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s();
  };
  try {
    // The stores start side by side. Each carrier gets a store of its own: every target uses the
    // same topic names, and a carrier carries every compacted topic of its store.
    const started = await Promise.allSettled([
      startKafka({ compaction: 'off' }),
      startKafka({ compaction: 'off' }),
      startKfake({ brokers: 3 }),
      startKfake({ brokers: 3 }),
    ]);
    for (const s of started) if (s.status === 'fulfilled') stops.push(() => s.value.stop());
    const failure = started.find((s) => s.status === 'rejected');
    if (failure) throw failure.reason;
    const [kafkaOff, kafkaCarried, kfake, kfakeCarried] = started.map((s) => (s as PromiseFulfilledResult<{ bootstrap: string }>).value);
    for (const [name, upstream, carry] of [
      ['kcompact/kafka-off', kafkaOff!.bootstrap, false],
      ['kcompact/kfake', kfake!.bootstrap, false],
      ['kcompact/kafka-off+carry', kafkaCarried!.bootstrap, true],
      ['kcompact/kfake+carry', kfakeCarried!.bootstrap, true],
    ] as const) {
      const proxy = await startCompactingProxy(upstream, { brokerDefaults, carry });
      stops.push(() => proxy.stop());
      targets.push(kcompactTarget(name, proxy.bootstrap, () => proxy.compactNow(), carry ? upstream : undefined));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { targets, stop };
}
