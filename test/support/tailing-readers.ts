/**
 * Tail readers for issue 33's soak test ("kcompact's own records never cost a client anything"):
 * every client of the bed reads one partition from its start, reports when it has caught up
 * with the high watermark it asked for at start (the record at H - 1 arrived), then waits at the
 * end until a record with a given key, reporting every record, error and (librdkafka) fetch-size
 * growth as an event (tailing-readers/types.ts; test/peers/README.md, "Tail readers").
 *
 * franz-go, confluent-kafka, kafka-python and Java print their own events (the `tail` subcommand
 * of franzclient, ck.py and kp.py; JavaClient's `tail` request); kcat and kafkajs are wrapped
 * here (tailing-readers/kcat.ts, tailing-readers/kafkajs.ts).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { javaArgs, javaBin } from './java.js';
import { binDir, pythonScriptsDir, venvPython } from './paths.js';
import { startKafkajsTail } from './tailing-readers/kafkajs.js';
export { groupCoordinatorReady } from './tailing-readers/coordinator.js';
import { startKcatTail } from './tailing-readers/kcat.js';
import { TailLog } from './tailing-readers/log.js';
import { ChildReader, jsonEvents } from './tailing-readers/spawned.js';
import type { Isolation, TailDriver, TailEvent, TailEventOf, TailMode, TailOptions, TailReader } from './tailing-readers/types.js';

export type { ClientEvent, ExitEvent, Isolation, TailDriver, TailEvent, TailEventOf, TailMode, TailOptions, TailReader } from './tailing-readers/types.js';

const ISOLATIONS: readonly Isolation[] = ['read_uncommitted', 'read_committed'];
const DEFAULT_TIMEOUT_MS = 120_000;
/** JavaClient's heap: one JVM per reader, several side by side. */
const JAVA_HEAP_MB = 256;

const driver = (d: Omit<TailDriver, 'isolations' | 'notes' | 'unsupported'> & Partial<Pick<TailDriver, 'notes' | 'unsupported'>>): TailDriver => ({
  isolations: ISOLATIONS,
  notes: [],
  unsupported: {},
  ...d,
});

export const TAIL_DRIVERS: readonly TailDriver[] = [
  driver({ id: 'franz-go', name: 'franz-go (kgo)', modes: ['assign', 'group', 'share'], reportsFetchGrowth: false }),
  driver({
    id: 'librdkafka',
    name: 'librdkafka (Python confluent-kafka)',
    modes: ['assign', 'group', 'share'],
    reportsFetchGrowth: true,
    notes: ['librdkafka needs a group.id even to assign: the assigned reader has a fresh one it never joins nor commits.'],
  }),
  driver({
    id: 'kafka-python',
    name: 'kafka-python',
    modes: ['assign', 'group'],
    reportsFetchGrowth: false,
    unsupported: { share: 'kafka-python has no share consumer (KIP-932).' },
    notes: ['kafka-python reports most fetch trouble only by logging it: its ERROR log records are error events.'],
  }),
  driver({ id: 'java', name: 'Java kafka-clients', modes: ['assign', 'group', 'share'], reportsFetchGrowth: false }),
  driver({
    id: 'kafkajs',
    name: 'kafkajs',
    modes: ['assign', 'group'],
    reportsFetchGrowth: false,
    unsupported: { share: 'kafkajs has no share consumer (KIP-932).' },
    notes: [
      'kafkajs has no assign(): its assigned reader is a group of its own with a fresh id, from the beginning, committing nothing.',
      "kafkajs's admin asks end offsets at READ_COMMITTED only: at read_uncommitted the start's high watermark comes from a raw ListOffsets.",
    ],
  }),
  driver({
    id: 'kcat',
    name: 'kcat',
    modes: ['assign'],
    reportsFetchGrowth: true,
    unsupported: {
      group: 'kcat -G has no commit of its own and no way to say when it has caught up; not a group reader worth testing.',
      share: 'kcat has no share consumer mode, and its librdkafka (2.0.2) predates share groups (KIP-932).',
    },
    notes: ["kcat cannot ask an end offset at an isolation level: the start's high watermark comes from a raw ListOffsets."],
  }),
];

export function tailDriver(id: TailDriver['id']): TailDriver {
  const d = TAIL_DRIVERS.find((x) => x.id === id);
  if (!d) throw new Error(`no tail driver ${id}`);
  return d;
}

/** Every mode and isolation level each driver reads in (share last, per driver). */
export function tailCombinations(drivers: readonly TailDriver[] = TAIL_DRIVERS): { driver: TailDriver; mode: TailMode; isolation: Isolation }[] {
  return drivers.flatMap((d) => d.modes.flatMap((mode) => d.isolations.map((isolation) => ({ driver: d, mode, isolation }))));
}

/** A type guard for waitFor: `reader.waitFor(isEvent('caughtUp'), ms)`. */
export function isEvent<K extends TailEvent['event']>(kind: K): (e: TailEvent) => e is TailEventOf<K> {
  return (e): e is TailEventOf<K> => e.event === kind;
}

/** The flags of the `tail` subcommand franzclient, ck.py and kp.py share. */
function cliFlags(o: Required<TailOptions>): string[] {
  const flags = ['tail', '--brokers', o.bootstrap, '--topic', o.topic, '--partition', String(o.partition), '--isolation', o.isolation];
  flags.push('--until-key', o.untilKey, '--timeout-ms', String(o.timeoutMs));
  if (o.mode === 'share') flags.push('--share', o.group);
  else flags.push('--mode', o.mode, ...(o.mode === 'group' ? ['--group', o.group] : []));
  return flags;
}

/** Starts the child of a client that prints its own events. */
function startCli(d: TailDriver, o: Required<TailOptions>, child: ChildReader): void {
  switch (d.id) {
    case 'franz-go':
      return child.start(path.join(binDir, 'franzclient'), cliFlags(o));
    case 'librdkafka':
      return child.start(venvPython, [path.join(pythonScriptsDir, 'ck.py'), ...cliFlags(o)]);
    case 'kafka-python':
      return child.start(venvPython, [path.join(pythonScriptsDir, 'kp.py'), ...cliFlags(o)]);
    case 'java': {
      const request = {
        op: 'tail',
        bootstrap: o.bootstrap,
        topic: o.topic,
        partition: o.partition,
        ...(o.mode === 'share' ? { share: o.group } : { mode: o.mode, group: o.group }),
        isolation: o.isolation,
        untilKey: o.untilKey,
        timeoutMs: o.timeoutMs,
      };
      const file = child.writeFile('request.json', JSON.stringify(request) + '\n');
      return child.start(javaBin(), javaArgs('JavaClient', [file], JAVA_HEAP_MB));
    }
    default:
      throw new Error(`${d.id} does not print its own tail events`);
  }
}

/**
 * Starts a tail reader of `driver` at once (its events come as the client runs). The options'
 * group, when absent, is a fresh one; `reader.options` has it.
 */
export function startTail(d: TailDriver, opts: TailOptions): TailReader {
  const isolation = opts.isolation ?? 'read_uncommitted';
  if (!d.modes.includes(opts.mode)) throw new Error(`${d.name} cannot tail in mode ${opts.mode}: ${d.unsupported[opts.mode] ?? 'unsupported'}`);
  if (!d.isolations.includes(isolation)) throw new Error(`${d.name} cannot tail at ${isolation}`);
  const o: Required<TailOptions> = {
    ...opts,
    partition: opts.partition ?? 0,
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    isolation,
    group: opts.group ?? `tail-${d.id}-${opts.mode}-${randomBytes(4).toString('hex')}`,
  };
  const label = `${d.name} ${o.mode} ${o.isolation}`;
  let stderrTail: (lines?: number) => string = () => '';
  const log = new TailLog(
    () => label,
    () => stderrTail(),
  );
  let stop: () => Promise<void>;
  if (d.id === 'kafkajs') {
    stop = startKafkajsTail(o, log).stop;
  } else {
    const child = d.id === 'kcat' ? startKcatTail(o, log) : new ChildReader(log, jsonEvents(log));
    if (d.id !== 'kcat') startCli(d, o, child);
    stderrTail = (lines) => child.stderrTail(lines);
    stop = () => child.stop();
  }
  return {
    driver: d,
    options: o,
    label,
    events: log.events,
    waitFor: ((match: (e: TailEvent) => boolean, timeoutMs: number) => log.waitFor(match, timeoutMs)) as TailReader['waitFor'],
    errors: () => log.of('error'),
    fetchGrew: () => log.of('fetchGrew'),
    records: () => log.of('record'),
    stderrTail: (lines) => stderrTail(lines),
    stop,
  };
}
