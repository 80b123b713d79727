/**
 * Runners for the bed's non-Node clients: franzclient (franz-go), ck.py (librdkafka through
 * confluent-kafka) and kcat (librdkafka's CLI). Each takes a bootstrap address, returns the
 * summary format of summary.ts, and throws with the client's errors and stderr tail on failure.
 */
import path from 'node:path';
import { binDir, pythonScriptsDir, venvPython } from './paths.js';
import { runProcess, tail, type RunOptions, type RunResult } from './processes.js';
import {
  consumeFlags,
  generatorFlags,
  produceFlags,
  summarize,
  type ConsumeSpec,
  type ConsumeSummary,
  type ConsumedRecord,
  type ProduceSpec,
  type ProduceSummary,
} from './summary.js';

/** Room for process start-up beyond the client's own deadline. */
const STARTUP_MARGIN_MS = 15_000;

function describeFailure(what: string, r: RunResult): string {
  const json = lastJsonLine(r.stdout);
  const errors = json && Array.isArray(json.errors) && json.errors.length ? `; errors: ${json.errors.join('; ')}` : '';
  return `${what} exited ${r.code ?? r.signal}${errors}; stderr tail:\n${tail(r.stderr)}`;
}

function lastJsonLine(stdout: string): { errors?: string[] } | undefined {
  const line = stdout.trimEnd().split('\n').pop();
  if (!line?.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as { errors?: string[] };
  } catch {
    return undefined;
  }
}

async function runJson<T>(command: string, args: readonly string[], what: string, opts: RunOptions): Promise<T> {
  const r = await runProcess(command, args, opts);
  if (r.code !== 0) throw new Error(describeFailure(what, r));
  const json = lastJsonLine(r.stdout);
  if (!json) throw new Error(`${what} printed no JSON summary; stdout tail:\n${tail(r.stdout)}\nstderr tail:\n${tail(r.stderr)}`);
  return json as T;
}

function timeoutFor(spec: { timeoutMs?: number }, opts: RunOptions): RunOptions {
  return { ...opts, timeoutMs: opts.timeoutMs ?? (spec.timeoutMs ?? 30_000) + STARTUP_MARGIN_MS };
}

/** Runs franzclient with raw arguments and returns its parsed JSON summary. */
export function franzclient<T = unknown>(args: readonly string[], opts: RunOptions = {}): Promise<T> {
  return runJson<T>(path.join(binDir, 'franzclient'), args, `franzclient ${args[0] ?? ''}`, opts);
}

/** Runs a script of test/peers/python with the bed's venv and returns its parsed JSON summary. */
export function python<T = unknown>(script: string, args: readonly string[], opts: RunOptions = {}): Promise<T> {
  return runJson<T>(venvPython, [path.join(pythonScriptsDir, script), ...args], `${script} ${args[0] ?? ''}`, opts);
}

export function franzProduce(bootstrap: string, spec: ProduceSpec, opts: RunOptions = {}): Promise<ProduceSummary> {
  return franzclient<ProduceSummary>(['produce', ...produceFlags(bootstrap, spec)], timeoutFor(spec, opts));
}

export function franzConsume(bootstrap: string, spec: ConsumeSpec, opts: RunOptions = {}): Promise<ConsumeSummary> {
  return franzclient<ConsumeSummary>(['consume', ...consumeFlags(bootstrap, spec)], timeoutFor(spec, opts));
}

export function ckProduce(bootstrap: string, spec: ProduceSpec, opts: RunOptions = {}): Promise<ProduceSummary> {
  return python<ProduceSummary>('ck.py', ['produce', ...produceFlags(bootstrap, spec)], timeoutFor(spec, opts));
}

export function ckConsume(bootstrap: string, spec: ConsumeSpec, opts: RunOptions = {}): Promise<ConsumeSummary> {
  return python<ConsumeSummary>('ck.py', ['consume', ...consumeFlags(bootstrap, spec)], timeoutFor(spec, opts));
}

export interface TxnSpec extends Omit<ProduceSpec, 'count' | 'tombstoneEvery'> {
  /** Transactions; even-numbered ones commit, odd ones abort (default 4). */
  transactions?: number;
  /** Records per transaction (default 10). */
  perTxn?: number;
  transactionalId?: string;
  group?: string;
  records?: boolean;
}

/**
 * Transactional produce of committed and aborted batches, then a read_committed consume that
 * must see exactly the committed records; the summary's `transactions` counts both kinds.
 */
export function ckTxn(bootstrap: string, spec: TxnSpec, opts: RunOptions = {}): Promise<ConsumeSummary> {
  const args = ['txn', '--brokers', bootstrap, '--topic', spec.topic, ...generatorFlags(spec)];
  if (spec.transactions !== undefined) args.push('--transactions', String(spec.transactions));
  if (spec.perTxn !== undefined) args.push('--per-txn', String(spec.perTxn));
  if (spec.transactionalId !== undefined) args.push('--transactional-id', spec.transactionalId);
  if (spec.group !== undefined) args.push('--group', spec.group);
  if (spec.records) args.push('--records');
  return python<ConsumeSummary>('ck.py', args, timeoutFor(spec, opts));
}

/** Runs kcat with raw arguments; a non-zero exit throws. */
export async function kcat(args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const r = await runProcess('kcat', args, opts);
  if (r.code !== 0) throw new Error(describeFailure(`kcat ${args.join(' ')}`, r));
  return r;
}

export interface KcatMetadata {
  brokers: { id: number; name: string }[];
  topics: { topic: string; partitions: { partition: number; leader: number }[]; error?: string }[];
}

/** `kcat -L -J`: the cluster as librdkafka sees it. */
export async function kcatMetadata(bootstrap: string, topic?: string, opts: RunOptions = {}): Promise<KcatMetadata> {
  const r = await kcat(['-L', '-J', '-b', bootstrap, ...(topic ? ['-t', topic] : [])], { timeoutMs: 30_000, ...opts });
  return JSON.parse(r.stdout) as KcatMetadata;
}

/** Splits kcat output printed with KCAT_FORMAT, whose lengths make binary keys and values safe. */
function parseKcatRecords(out: Buffer): ConsumedRecord[] {
  const recs: ConsumedRecord[] = [];
  let pos = 0;
  const field = () => {
    const end = out.indexOf(0x09, pos);
    if (end < 0) throw new Error(`kcat output cut short at byte ${pos}`);
    const v = Number(out.subarray(pos, end).toString('latin1'));
    pos = end + 1;
    return v;
  };
  const bytes = (len: number) => {
    if (len < 0) return null;
    const b = Buffer.from(out.subarray(pos, pos + len));
    pos += len;
    return b;
  };
  while (pos < out.length) {
    const partition = field();
    const offset = field();
    const keyLen = field();
    const valueLen = field();
    const key = bytes(keyLen);
    const value = bytes(valueLen);
    if (out[pos] !== 0x0a) throw new Error(`kcat output out of step at byte ${pos}`);
    pos++;
    recs.push({ partition, offset, key, value });
  }
  return recs;
}

const KCAT_FORMAT = '%p\t%o\t%K\t%S\t%k%s\n';

/** Runs a kcat consume (-C or -G mode, as `args` say) and returns the records it printed. */
export async function kcatRecords(args: readonly string[], opts: RunOptions = {}): Promise<{ records: ConsumedRecord[]; run: RunResult }> {
  const r = await kcat([...args, '-f', KCAT_FORMAT], opts);
  return { records: parseKcatRecords(r.stdoutBytes), run: r };
}

/** Reads a topic from the beginning with kcat (no group) until `count` records or the end. */
export async function kcatConsume(bootstrap: string, spec: ConsumeSpec, opts: RunOptions = {}): Promise<ConsumeSummary> {
  const args = ['-C', '-q', '-b', bootstrap, '-t', spec.topic, '-o', 'beginning', '-e', '-c', String(spec.count)];
  args.push('-X', 'check.crcs=true');
  if (spec.isolation) args.push('-X', `isolation.level=${spec.isolation}`);
  const { records, run } = await kcatRecords(args, timeoutFor(spec, opts));
  const summary = summarize(records, { name: 'kcat' }, { expected: spec.count, records: spec.records });
  if (summary.errors.length) throw new Error(`kcat consume: ${summary.errors.join('; ')}; stderr tail:\n${tail(run.stderr)}`);
  return summary;
}
