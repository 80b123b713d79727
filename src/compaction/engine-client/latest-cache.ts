/**
 * The table API's answers for a key's latest record (src/engine/api/table-reads.ts), kept on the
 * main thread while the partition's index has not moved since: a warm key's read then costs no
 * message to the worker. The worker says when an index moves (a new log end, a new snapshot), and
 * every answer of that partition goes then; an answer that was being made while one moved is not
 * kept, as it may be of the index before the move.
 */
import { partitionKey } from '../../engine/api/partition-key.js';
import type { LatestAnswer } from '../../engine/api/table-reads.js';

/** Answers kept at most, all partitions together: past it the cache starts again empty. */
const MAX_ANSWERS = 50_000;

export class LatestCache {
  /** Per partition, how many times its index moved. */
  private readonly moves = new Map<string, number>();
  private readonly answers = new Map<string, Map<string, LatestAnswer>>();
  private size = 0;

  /** The partition's index moved: its answers go. */
  moved(topic: string, partition: number): void {
    const p = partitionKey(topic, partition);
    this.moves.set(p, (this.moves.get(p) ?? 0) + 1);
    const kept = this.answers.get(p);
    if (kept) {
      this.size -= kept.size;
      this.answers.delete(p);
    }
  }

  /** Every index may have moved (the worker started again). */
  clear(): void {
    for (const p of this.answers.keys()) this.moves.set(p, (this.moves.get(p) ?? 0) + 1);
    this.answers.clear();
    this.size = 0;
  }

  /** The count to hand put() for an answer asked for now. */
  movesOf(topic: string, partition: number): number {
    return this.moves.get(partitionKey(topic, partition)) ?? 0;
  }

  /** A kept answer for the key from an index that has read at least up to atLeast. */
  get(topic: string, partition: number, key: Buffer, atLeast: number): LatestAnswer | undefined {
    const answer = this.answers.get(partitionKey(topic, partition))?.get(key.toString('latin1'));
    return answer && answer.indexedTo >= atLeast ? answer : undefined;
  }

  /** Keeps an answer asked for when the partition's moves were `movesAtAsk`, unless its index moved since. */
  put(topic: string, partition: number, key: Buffer, answer: LatestAnswer, movesAtAsk: number): void {
    const p = partitionKey(topic, partition);
    if ((this.moves.get(p) ?? 0) !== movesAtAsk) return;
    if (this.size >= MAX_ANSWERS) {
      this.answers.clear();
      this.size = 0;
    }
    let kept = this.answers.get(p);
    if (!kept) this.answers.set(p, (kept = new Map()));
    const k = key.toString('latin1');
    if (!kept.has(k)) this.size++;
    kept.set(k, answer);
  }
}
