/**
 * An in-memory store and key index for the table API's tests: partitions' logs, a writer that
 * appends to them, and TableReads that judge conditional records from the log's order as
 * engine/api/table-reads.ts says (a void record is left out of everything). The index can be held
 * behind the log (`holdIndexAt`) to test the waits, and a TableError planted per topic.
 */
import { IF_MATCH_HEADER, IF_NONE_MATCH_HEADER, TableError } from '../../src/engine/api/table-reads.js';
import type { Behind, ChangesAnswer, LatestAnswer, TableKey, TableReads, TableRecord, VerdictAnswer } from '../../src/engine/api/table-reads.js';
import type { TableWrite, TableWriter } from '../../src/tables/table-writer.js';
import type { TopicPartitions } from '../../src/tables/topic-partitions.js';
import { ApiError } from '../../src/tables/api-error.js';

interface Entry {
  record: TableRecord;
  verdict: 'won' | 'void' | 'unconditional';
}

const keyText = (key: TableKey) => ('bytes' in key ? key.bytes.toString('hex') : `json:${JSON.stringify(key.json)}`);

export class FakeTables implements TableReads, TableWriter, TopicPartitions {
  private readonly logs = new Map<string, Entry[]>();
  private readonly counts = new Map<string, number>();
  private readonly notCompacted = new Set<string>();
  private readonly heldAt = new Map<string, number>();
  private waiters: (() => void)[] = [];
  /** How keys given as JSON compare: by this function of the record's key bytes. */
  jsonKeyOf: (key: Buffer) => unknown = (key) => JSON.parse(key.toString('utf8'));
  /** Every changes() call, for the tests of the streams' loops. */
  readonly changesCalls: { topic: string; partition: number; from: number; limit: number; waitMs: number }[] = [];
  /** Calls to append that failed on purpose: throw this on the next append. */
  failNextAppend: Error | undefined;

  topic(name: string, partitions: number, opts: { compacted?: boolean } = {}): this {
    this.counts.set(name, partitions);
    if (opts.compacted === false) this.notCompacted.add(name);
    for (let p = 0; p < partitions; p++) this.logs.set(`${name}-${p}`, []);
    return this;
  }

  /** The index reads no further than `offset` (exclusive) of the partition until released. */
  holdIndexAt(topic: string, partition: number, offset: number | undefined): void {
    if (offset === undefined) this.heldAt.delete(`${topic}-${partition}`);
    else this.heldAt.set(`${topic}-${partition}`, offset);
    this.wake();
  }

  log(topic: string, partition: number): TableRecord[] {
    return this.entries(topic, partition).map((e) => e.record);
  }

  // TopicPartitions

  async count(topic: string): Promise<number> {
    const n = this.counts.get(topic);
    if (n === undefined) throw new ApiError(404, `topic ${topic} does not exist in the store`, 'create it');
    return n;
  }

  // TableWriter

  async append(topic: string, partition: number, w: TableWrite): Promise<number> {
    if (this.failNextAppend) {
      const err = this.failNextAppend;
      this.failNextAppend = undefined;
      throw err;
    }
    const log = this.entries(topic, partition);
    const record: TableRecord = {
      partition,
      offset: log.length,
      timestamp: w.timestamp,
      key: Buffer.from(w.key),
      value: w.value === null ? null : Buffer.from(w.value),
      headers: w.headers.map((h) => ({ key: h.key.toString('utf8'), value: h.value })),
    };
    log.push({ record, verdict: this.judge(log, record) });
    this.wake();
    return record.offset;
  }

  // TableReads

  async latest(topic: string, partition: number, key: TableKey, atLeast: number, timeoutMs: number): Promise<LatestAnswer | Behind> {
    this.check(topic, partition);
    if (!(await this.reach(topic, partition, atLeast, timeoutMs))) return { behind: true, indexedTo: this.indexedTo(topic, partition) };
    const indexedTo = this.indexedTo(topic, partition);
    const live = this.latestOf(this.entries(topic, partition).slice(0, indexedTo), (r) => this.sameKey(r.key, key));
    return { record: live && live.value !== null ? live : null, indexedTo };
  }

  /** Writes expected and not yet let go of (TableReads.expect). */
  expecting = 0;

  expect(): () => void {
    this.expecting++;
    let done = false;
    return () => {
      if (!done) this.expecting--;
      done = true;
    };
  }

  async verdict(topic: string, partition: number, offset: number, timeoutMs: number): Promise<VerdictAnswer | Behind> {
    this.check(topic, partition);
    if (!(await this.reach(topic, partition, offset + 1, timeoutMs))) return { behind: true, indexedTo: this.indexedTo(topic, partition) };
    return { verdict: this.entries(topic, partition)[offset]!.verdict };
  }

  async changes(topic: string, partition: number, from: number, key: TableKey | null, limit: number, waitMs: number): Promise<ChangesAnswer> {
    this.check(topic, partition);
    this.changesCalls.push({ topic, partition, from, limit, waitMs });
    if (limit > 0 && this.indexedTo(topic, partition) <= from) await this.reach(topic, partition, from + 1, waitMs);
    const end = this.indexedTo(topic, partition);
    const records: TableRecord[] = [];
    let next = Math.max(from, end);
    for (let o = from; o < end && records.length < limit; o++) {
      const e = this.entries(topic, partition)[o]!;
      next = o + 1;
      if (e.verdict === 'void' || (key && !this.sameKey(e.record.key, key))) continue;
      records.push(e.record);
    }
    if (limit === 0) next = end;
    return { records, next };
  }

  private entries(topic: string, partition: number): Entry[] {
    const log = this.logs.get(`${topic}-${partition}`);
    if (!log) throw new TableError(404, `${topic}-${partition} does not exist`);
    return log;
  }

  private check(topic: string, partition: number): void {
    if (this.notCompacted.has(topic)) throw new TableError(409, `topic ${topic} is not compacted (cleanup.policy is not compact)`);
    this.entries(topic, partition);
  }

  private indexedTo(topic: string, partition: number): number {
    const length = this.entries(topic, partition).length;
    return Math.min(length, this.heldAt.get(`${topic}-${partition}`) ?? length);
  }

  private sameKey(bytes: Buffer, key: TableKey): boolean {
    if ('bytes' in key) return bytes.equals(key.bytes);
    try {
      return keyText({ json: this.jsonKeyOf(bytes) }) === keyText(key);
    } catch {
      return false;
    }
  }

  private latestOf(entries: Entry[], match: (r: TableRecord) => boolean): TableRecord | undefined {
    for (let i = entries.length - 1; i >= 0; i--) if (entries[i]!.verdict !== 'void' && match(entries[i]!.record)) return entries[i]!.record;
    return undefined;
  }

  /** The condition a record carries, judged against the live records before it. */
  private judge(log: Entry[], record: TableRecord): Entry['verdict'] {
    const ifMatch = record.headers.find((h) => h.key === IF_MATCH_HEADER);
    const ifNoneMatch = record.headers.find((h) => h.key === IF_NONE_MATCH_HEADER);
    if (!ifMatch && !ifNoneMatch) return 'unconditional';
    const current = this.latestOf(log, (r) => r.key.equals(record.key));
    const live = current && current.value !== null ? current : undefined;
    if (ifNoneMatch) return live ? 'void' : 'won';
    return live && String(live.offset) === ifMatch!.value?.toString() ? 'won' : 'void';
  }

  private async reach(topic: string, partition: number, offset: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.indexedTo(topic, partition) < offset) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return true;
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w();
  }
}
