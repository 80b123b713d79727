/**
 * kcat as a tail reader: `kcat -C` of one partition from the beginning without -e, so it waits at
 * the end, with librdkafka's fetch debugging (-d fetch) on stderr. kcat prints only records and
 * log lines, so this wrapper makes the events: the start's end offset (a raw ListOffsets: kcat
 * cannot ask one at an isolation level), caughtUp and done from the records, error and fetchGrew
 * from stderr, and the deadline. It stops kcat at done or the deadline.
 */
import { endOffset } from './end-offset.js';
import type { TailLog } from './log.js';
import { Progress } from './progress.js';
import { ChildReader, Lines } from './spawned.js';
import type { TailOptions } from './types.js';

/** Offset, key and value lengths (-1 for null), then key and value: binary-safe, unlike %k\t%s. */
const FORMAT = '%o\t%K\t%S\t%k%s\n';
const FETCH_GREW = 'Increasing max fetch bytes';

interface KcatRecord {
  offset: number;
  key: string | null;
  value: string | null;
}

/** Cuts kcat's FORMAT output into records as it arrives (a record may straddle two reads). */
class Records {
  private buf = Buffer.alloc(0);

  push(chunk: Buffer): KcatRecord[] {
    this.buf = Buffer.concat([this.buf, chunk]);
    const out: KcatRecord[] = [];
    for (;;) {
      const fields: number[] = [];
      let pos = 0;
      while (fields.length < 3) {
        const tab = this.buf.indexOf(0x09, pos);
        if (tab < 0) return out;
        fields.push(Number(this.buf.subarray(pos, tab).toString('latin1')));
        pos = tab + 1;
      }
      const [offset, keyLen, valueLen] = fields as [number, number, number];
      const end = pos + Math.max(keyLen, 0) + Math.max(valueLen, 0);
      if (this.buf.length <= end) return out;
      if (this.buf[end] !== 0x0a || !Number.isSafeInteger(offset)) throw new Error(`kcat output out of step: ${this.buf.subarray(0, 200).toString('latin1')}`);
      const text = (from: number, len: number) => (len < 0 ? null : this.buf.subarray(from, from + len).toString('utf8'));
      out.push({ offset, key: text(pos, keyLen), value: text(pos + Math.max(keyLen, 0), valueLen) });
      this.buf = this.buf.subarray(end + 1);
    }
  }
}

/** librdkafka's debug lines (%7|) say only fetchGrew; its error lines (%0| to %3|) and kcat's own "% ERROR: ..." are errors. */
function stderrEvent(line: string): { event: 'error' | 'fetchGrew'; message: string } | undefined {
  if (line.includes(FETCH_GREW)) return { event: 'fetchGrew', message: line };
  if (/^%[4-7]\|/.test(line)) return undefined;
  if (/^%[0-3]\|/.test(line) || /ERROR/.test(line)) return { event: 'error', message: line };
  return undefined;
}

export function kcatArgs(o: Required<Pick<TailOptions, 'bootstrap' | 'topic' | 'partition' | 'isolation'>>): string[] {
  return [
    ...['-C', '-q', '-u', '-b', o.bootstrap, '-t', o.topic, '-p', String(o.partition), '-o', 'beginning'],
    ...['-f', FORMAT, '-d', 'fetch', '-X', `isolation.level=${o.isolation}`, '-X', 'check.crcs=true'],
  ];
}

export function startKcatTail(o: Required<Omit<TailOptions, 'group'>>, log: TailLog): ChildReader {
  const progress = new Progress(log, o.untilKey);
  const deadline = Date.now() + o.timeoutMs;
  const records = new Records();
  const errLines = new Lines();
  const finish = () => void child.stop().catch((e: Error) => log.push({ event: 'error', message: `stopping kcat: ${e.message}` }));
  const child: ChildReader = new ChildReader(log, {
    stdout(chunk) {
      try {
        for (const r of records.push(chunk)) if (progress.record(r.offset, r.key, r.value)) finish();
      } catch (e) {
        log.push({ event: 'error', message: (e as Error).message });
        finish();
      }
    },
    stderr(chunk) {
      for (const line of errLines.push(chunk)) {
        const e = stderrEvent(line);
        if (e) log.push(e);
      }
    },
    tick() {
      if (Date.now() >= deadline && progress.timeout()) finish();
    },
  });
  void (async () => {
    try {
      progress.begin(await endOffset(o.bootstrap, o.topic, o.partition, o.isolation));
    } catch (e) {
      log.push({ event: 'error', message: `end offset: ${(e as Error).message}` });
      finish();
      return;
    }
    child.start('kcat', kcatArgs(o));
  })();
  return child;
}
