/**
 * The bed's command-line clients that share one set of subcommands, flags and JSON summaries
 * (test/peers/README.md): franzclient (franz-go), ck.py (librdkafka through confluent-kafka) and
 * kp.py (kafka-python). One driver serves all three.
 */
import path from 'node:path';
import { runProcess, tail } from '../../processes.js';
import { consumeFlags, produceFlags, type ConsumeSummary } from '../../summary.js';
import type { ClientDriver, ConfigsRun, Operation, ShareDelivery, ShareReadFixture } from '../types.js';

interface Summary {
  errors: string[];
}

/** How to run one subcommand of the client: its argv for `args`. */
export type Argv = (args: readonly string[]) => [command: string, args: string[]];

/** Room beyond the client's own deadline for starting up and shutting down. */
const MARGIN_MS = 30_000;

/** Runs a subcommand and returns its JSON summary whatever its exit status (which says only whether errors is empty). */
async function summary<T extends Summary>(argv: Argv, args: readonly string[], clientTimeoutMs: number): Promise<T> {
  const [command, full] = argv(args);
  const r = await runProcess(command, full, { timeoutMs: clientTimeoutMs + MARGIN_MS });
  const line = r.stdout.trimEnd().split('\n').pop() ?? '';
  if (!line.startsWith('{')) throw new Error(`${path.basename(command)} ${args[0]} printed no summary (exit ${r.code}); stderr tail:\n${tail(r.stderr)}`);
  return JSON.parse(line) as T;
}

async function ok<T extends Summary>(argv: Argv, args: readonly string[], clientTimeoutMs = 30_000): Promise<T> {
  const s = await summary<T>(argv, args, clientTimeoutMs);
  if (s.errors.length) throw new Error(`${args[0]}: ${s.errors.join('; ')}`);
  return s;
}

export interface BedCliOptions {
  id: string;
  name: string;
  argv: Argv;
  version(): Promise<string>;
  notes?: Partial<Record<Operation, string>>;
  /** Whether the client has the share subcommand (a share consumer, KIP-932), or why not. */
  share: true | { unsupported: string };
}

/**
 * Deadlines of runs that end as soon as they have what they wait for: a bound for a client that
 * hangs, not a measure, so a slow start on a busy machine does not fail the cell.
 */
const RUN_DEADLINE_MS = 120_000;

export function bedCliDriver(o: BedCliOptions): ClientDriver {
  const { argv } = o;
  return {
    id: o.id,
    name: o.name,
    unsupported: o.share === true ? {} : { shareRead: o.share.unsupported },
    notes: o.notes ?? {},
    version: o.version,
    async produce(b, f) {
      // ck.py and kp.py only: franzclient has no such flag (franz-go goes without where the store has no producer ids).
      const idempotence = f.idempotence === false ? ['--no-idempotence'] : [];
      const produced = await ok<Summary & { partitions: Record<string, { count: number; firstOffset: number; lastOffset: number }> }>(argv, [
        'produce',
        ...produceFlags(b, { topic: f.topic, ...f.generated }),
        ...idempotence,
      ]);
      const keyless = await summary(argv, ['produce', '--brokers', b, '--topic', f.topic, '--count', '1', '--keys', '0', ...idempotence], 30_000);
      return { partitions: produced.partitions, keyless: keyless.errors.length ? keyless.errors.join('; ') : null };
    },
    async group(b, f) {
      const args = ['consume', ...consumeFlags(b, { topic: f.topic, count: f.count, group: f.group, records: true, timeoutMs: RUN_DEADLINE_MS })];
      let s = await summary<Summary & ConsumeSummary>(argv, args, RUN_DEADLINE_MS);
      // kafka-python in a fresh group on kfake has read nothing at all before its deadline in some
      // runs on a busy machine, every other client and cell passing; until the cause is known the
      // cell tries once more (nothing was committed) and says so on stderr.
      if (s.errors.length === 1 && /^saw 0 of \d+ records before the deadline$/.test(s.errors[0]!)) {
        process.stderr.write(`client matrix: ${o.name} read nothing in group ${f.group} before its deadline; trying once more\n`);
        s = await summary<Summary & ConsumeSummary>(argv, args, RUN_DEADLINE_MS);
      }
      if (s.errors.length) throw new Error(`consume: ${s.errors.join('; ')}`);
      return { records: s.records! };
    },
    async transactions(b, f) {
      const g = f.generated;
      const s = await ok<Summary & ConsumeSummary>(
        argv,
        [
          'txn',
          '--brokers',
          b,
          '--topic',
          f.topic,
          '--transactional-id',
          f.transactionalId,
          '--records',
          '--start',
          String(g.start),
          '--keys',
          String(g.keys),
          '--value-size',
          String(g.valueSize),
          '--transactions',
          String(g.transactions),
          '--per-txn',
          String(g.perTxn),
          '--timeout-ms',
          String(RUN_DEADLINE_MS),
        ],
        RUN_DEADLINE_MS,
      );
      return { records: s.records! };
    },
    async configs(b, f) {
      const flags = ['configs', '--brokers', b, '--topic', f.topic, '--partitions', String(f.partitions)];
      for (const [k, v] of Object.entries(f.create)) flags.push('--topic-config', `${k}=${v}`);
      for (const [k, v] of Object.entries(f.alter)) flags.push('--alter', `${k}=${v}`);
      return ok<Summary & ConfigsRun>(argv, flags);
    },
    async compactedRead(b, f) {
      // One record more than exist: the read ends f.idleMs after the last survivor, however long it took to reach it.
      const count = f.expected.length + 1;
      const s = await summary<Summary & ConsumeSummary>(
        argv,
        ['consume', ...consumeFlags(b, { topic: f.topic, count, records: true, timeoutMs: RUN_DEADLINE_MS, idleMs: f.idleMs })],
        RUN_DEADLINE_MS,
      );
      const short = `saw ${f.expected.length} of ${count} records before the deadline`;
      if (s.errors.length !== 1 || s.errors[0] !== short) throw new Error(`consume: ${s.errors.join('; ') || `read ${s.count} records, one more than exist`}`);
      return { records: s.records ?? [] };
    },
    ...(o.share === true && {
      async shareRead(b: string, f: ShareReadFixture) {
        const flags = ['share', '--brokers', b, '--topic', f.topic, '--group', f.group, '--count', String(f.expected)];
        flags.push('--isolation', f.isolation, '--idle-ms', String(f.idleMs), '--timeout-ms', String(RUN_DEADLINE_MS));
        if (f.release) flags.push('--release');
        return ok<Summary & { records: ShareDelivery[] }>(argv, flags, RUN_DEADLINE_MS);
      },
    }),
  };
}
