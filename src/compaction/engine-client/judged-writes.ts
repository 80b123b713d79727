/**
 * The verdicts on the table API's own conditional writes, told on the main thread without a
 * round trip to a worker that may be busy ingesting that very record. Two sources, whichever
 * tells first:
 *
 * - Foresight: while a write is on its way, the worker says, each time its index moves, what the
 *   verdict would be if the store put the record where the index now ends (PartitionStore.foresee).
 *   When the store's answer names that offset, the verdict is known at once.
 * - The log ends the worker publishes after each ingest (index-view.ts, JudgedEnd): the writer
 *   knows its record is conditional, so one that is judged and not among the voids won.
 */
import type { JudgedEnd, LogEnd } from '../../engine/api/index-view.js';
import { partitionKey } from '../../engine/api/partition-key.js';
import { firstAtLeast } from '../../common/sorted-search.js';
import type { WrittenRecord } from '../../engine/api/table-reads.js';

export type JudgedVerdict = 'won' | 'void';

/** What `judged` says of the conditional record at `offset`, or undefined when it does not cover it. */
export function judgedVerdict(judged: JudgedEnd | undefined, offset: number): JudgedVerdict | undefined {
  if (!judged || offset >= judged.to || offset < judged.voidsFrom) return undefined;
  return judged.voids[firstAtLeast(judged.voids, offset)] === offset ? 'void' : 'won';
}

/** A write on its way, and the worker's latest word on it. */
interface Sight {
  key: string;
  /** Where the index ended when the worker foresaw `verdict`; -1 before its first word. */
  at: number;
  verdict?: JudgedVerdict;
}

interface Waiter {
  offset: number;
  sight: Sight | undefined;
  resolve: (verdict: JudgedVerdict) => void;
}

export class JudgedWrites {
  private nextWrite = 1;
  private readonly sights = new Map<number, Sight>();
  private readonly sightOf = new WeakMap<WrittenRecord, Sight>();
  /** Per partition, the writes waiting for their verdict. */
  private readonly waiting = new Map<string, Set<Waiter>>();

  constructor(private readonly endOf: (topic: string, partition: number) => LogEnd | undefined) {}

  /** A write is on its way: the number the worker's foresight about it will carry. */
  expect(topic: string, partition: number, written: WrittenRecord): number {
    const write = this.nextWrite++;
    const sight: Sight = { key: partitionKey(topic, partition), at: -1 };
    this.sights.set(write, sight);
    this.sightOf.set(written, sight);
    return write;
  }

  /** The write was answered: the worker's further words on it are not listened to. */
  forget(write: number): void {
    this.sights.delete(write);
  }

  /** The verdict on the conditional record at `offset`, if already told. */
  now(topic: string, partition: number, offset: number, written?: WrittenRecord): JudgedVerdict | undefined {
    const sight = written && this.sightOf.get(written);
    if (sight?.at === offset) return sight.verdict;
    return judgedVerdict(this.endOf(topic, partition)?.judged, offset);
  }

  /**
   * Resolves with the verdict once a foresight or a published end tells it; `cancel` stops
   * waiting (the promise then never settles, and is let go).
   */
  watch(topic: string, partition: number, offset: number, written?: WrittenRecord): { verdict: Promise<JudgedVerdict>; cancel: () => void } {
    const key = partitionKey(topic, partition);
    let waiter!: Waiter;
    const verdict = new Promise<JudgedVerdict>((resolve) => (waiter = { offset, sight: written && this.sightOf.get(written), resolve }));
    let set = this.waiting.get(key);
    if (!set) this.waiting.set(key, (set = new Set()));
    set.add(waiter);
    const cancel = () => {
      const s = this.waiting.get(key);
      if (!s?.delete(waiter) || s.size > 0) return;
      this.waiting.delete(key);
    };
    return { verdict, cancel };
  }

  /** The worker foresaw the write's verdict were it at `at`. */
  foreseen(write: number, at: number, verdict: JudgedVerdict): void {
    const sight = this.sights.get(write);
    if (!sight) return;
    sight.at = at;
    sight.verdict = verdict;
    const set = this.waiting.get(sight.key);
    if (!set) return;
    for (const w of set) if (w.sight === sight && w.offset === at) this.tell(sight.key, set, w, verdict);
  }

  /** The partition's index published a new end: the writes it judged are told. */
  published(topic: string, partition: number, end: LogEnd): void {
    const key = partitionKey(topic, partition);
    const set = this.waiting.get(key);
    if (!set) return;
    for (const w of set) {
      const verdict = judgedVerdict(end.judged, w.offset);
      if (verdict !== undefined) this.tell(key, set, w, verdict);
    }
  }

  private tell(key: string, set: Set<Waiter>, w: Waiter, verdict: JudgedVerdict): void {
    set.delete(w);
    if (set.size === 0) this.waiting.delete(key);
    w.resolve(verdict);
  }
}
