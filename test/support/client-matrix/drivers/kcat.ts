/**
 * kcat, librdkafka's command-line client: produce, consume (-C) and balanced consumer groups
 * (-G); no admin API. Its transactional mode puts one run's whole input in one transaction,
 * committed at the end of the input, aborted when kcat is signalled.
 */
import type { ChildProcess } from 'node:child_process';
import { runProcess, spawnPiped, tail } from '../../processes.js';
import { kcatRecords } from '../../runners.js';
import type { RecordView } from '../../summary.js';
import type { ClientDriver, KeyValue } from '../types.js';

const TIMEOUT_MS = 30_000;
/** kcat 1.7.1 reads its input in blocks of this many bytes (kcat 1.8 reads lines as they come). */
const INPUT_BLOCK = 1024;

/** librdkafka prints an error's description only; name the ones the matrix looks for. */
function errorName(text: string): string {
  return text.replace('Broker: Broker failed to validate record', 'INVALID_RECORD (Broker: Broker failed to validate record)');
}

function lines(records: readonly KeyValue[]): string {
  return records.map((r) => `${r.key ?? ''}:${r.value ?? ''}\n`).join('');
}

function views(records: { partition: number; offset: number; key: Buffer | null; value: Buffer | null }[]): RecordView[] {
  return records.map((r) => ({ partition: r.partition, offset: r.offset, key: r.key?.toString('utf8') ?? null, value: r.value?.toString('utf8') ?? null }));
}

/** -K: splits key from value, -Z makes an empty value null (a tombstone). */
function produceArgs(b: string, topic: string, extra: string[] = []): string[] {
  return ['-P', '-b', b, '-t', topic, '-p', '0', '-K:', '-Z', ...extra];
}

async function produceOk(args: string[], input: string): Promise<string> {
  const r = await runProcess('kcat', args, { input, timeoutMs: TIMEOUT_MS });
  if (r.code !== 0) throw new Error(`kcat ${args.join(' ')} exited ${r.code}; stderr tail:\n${tail(r.stderr)}`);
  return r.stderr;
}

/**
 * An aborted transaction: the records are written, then SIGINT makes kcat abort. kcat 1.7.1
 * reads only whole blocks before its input ends, so the last record's value is padded to end
 * the input at a block boundary; once the upstream holds them all, SIGINT and the end of input
 * make it abort (its signal handler only raises a flag its read loop checks).
 */
async function abortedTransaction(b: string, topic: string, transactionalId: string, records: KeyValue[], delivered: () => Promise<void>): Promise<void> {
  const pad = (INPUT_BLOCK - (Buffer.byteLength(lines(records)) % INPUT_BLOCK)) % INPUT_BLOCK;
  const last = records[records.length - 1]!;
  const padded = lines([...records.slice(0, -1), { ...last, value: last.value + '.'.repeat(pad) }]);
  const child: ChildProcess = spawnPiped('kcat', produceArgs(b, topic, ['-X', `transactional.id=${transactionalId}`]));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
  try {
    child.stdin!.write(padded);
    await delivered();
    child.kill('SIGINT');
    child.stdin!.end();
    const code = await exited;
    if (code !== 0 || !/Aborting transaction/.test(stderr)) throw new Error(`kcat did not abort its transaction (exit ${code}); stderr tail:\n${tail(stderr)}`);
  } finally {
    clearTimeout(timer);
    child.kill('SIGKILL');
  }
}

export const kcat: ClientDriver = {
  id: 'kcat',
  name: 'kcat',
  unsupported: {
    configs: 'kcat has no admin API: it lists metadata (-L) and queries offsets (-Q), nothing more.',
    shareRead: 'kcat has no share consumer mode, and its librdkafka (2.0.2) predates share groups (KIP-932).',
  },
  notes: {
    group: 'kcat -G has no commit of its own: librdkafka commits the consumed offsets (enable.auto.commit) as kcat closes at the end (-e).',
    transactions:
      'kcat -X transactional.id=... runs one transaction per run: committed at the end of its input, aborted on SIGINT. kcat 1.7.1 ' +
      "reads its input in 1024-byte blocks until it ends, so the aborted transaction's input is padded to a whole block.",
  },
  async version() {
    const r = await runProcess('kcat', ['-V'], { timeoutMs: TIMEOUT_MS });
    const m = /Version (\S+) .*librdkafka (\S+)/.exec(r.stdout);
    if (!m) throw new Error(`kcat -V: no version in ${r.stdout}`);
    return `${m[1]} (librdkafka ${m[2]})`;
  },

  async produce(b, f) {
    // -v -v: a line per delivered record, with its offset.
    const stderr = await produceOk(produceArgs(b, f.topic, ['-v', '-v']), lines(f.records));
    const offsets = [...stderr.matchAll(/Message delivered to partition (\d+) \(offset (\d+)\)/g)].map((m) => ({ partition: m[1]!, offset: Number(m[2]) }));
    const partitions: Record<string, { count: number; firstOffset: number; lastOffset: number }> = {};
    for (const { partition, offset } of offsets) {
      const p = (partitions[partition] ??= { count: 0, firstOffset: offset, lastOffset: offset });
      p.count++;
      p.firstOffset = Math.min(p.firstOffset, offset);
      p.lastOffset = Math.max(p.lastOffset, offset);
    }
    // Without -K every line is a value with no key.
    const keyless = await runProcess('kcat', ['-P', '-b', b, '-t', f.topic, '-p', '0'], { input: 'keyless\n', timeoutMs: TIMEOUT_MS });
    return { partitions, keyless: keyless.code === 0 ? null : errorName(keyless.stderr.trim()) };
  },

  async group(b, f) {
    const { records } = await kcatRecords(['-b', b, '-G', f.group, '-q', '-e', '-X', 'auto.offset.reset=earliest', '-X', 'check.crcs=true', f.topic], {
      timeoutMs: TIMEOUT_MS,
    });
    return { records: views(records) };
  },

  async transactions(b, f, delivered) {
    let written = 0;
    for (const [i, t] of f.transactions.entries()) {
      const id = `${f.transactionalId}-${i}`;
      written += t.records.length;
      if (t.commit) await produceOk(produceArgs(b, f.topic, ['-X', `transactional.id=${id}`]), lines(t.records));
      else await abortedTransaction(b, f.topic, id, t.records, () => delivered(written));
    }
    const { records } = await kcatRecords(
      ['-C', '-q', '-b', b, '-t', f.topic, '-p', '0', '-o', 'beginning', '-e', '-X', 'isolation.level=read_committed', '-X', 'check.crcs=true'],
      { timeoutMs: TIMEOUT_MS },
    );
    return { records: views(records) };
  },

  async compactedRead(b, f) {
    // -e: kcat exits once librdkafka reports the end of the partition, i.e. its fetch position reached the high watermark.
    const { records } = await kcatRecords(['-C', '-q', '-b', b, '-t', f.topic, '-p', '0', '-o', 'beginning', '-e', '-X', 'check.crcs=true'], {
      timeoutMs: TIMEOUT_MS,
    });
    return { records: views(records) };
  },
};
