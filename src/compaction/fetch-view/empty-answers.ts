/**
 * Remembers which fetches were answered with nothing but an empty batch. Java, librdkafka and
 * franz-go move past such a batch; kafkajs ignores it and asks for the same offset again at
 * once, which would spin. A fetch that repeats such an answer is instead sent upstream past the
 * removed range, where the upstream holds it up to the client's max wait for new records.
 */
export interface EmptyAnswerOptions {
  /** How long an answer is remembered after the last fetch that repeated it. */
  ttlMs?: number;
  capacity?: number;
  clock?: () => number;
}

interface Entry {
  end: number;
  at: number;
}

export class EmptyAnswers {
  private readonly entries = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly capacity: number;
  private readonly clock: () => number;

  constructor(opts: EmptyAnswerOptions = {}) {
    this.ttlMs = opts.ttlMs ?? 60_000;
    this.capacity = opts.capacity ?? 10_000;
    this.clock = opts.clock ?? Date.now;
  }

  static key(clientId: string | null, topic: string, partition: number, offset: number): string {
    return `${clientId ?? ''}\u0000${topic}\u0000${partition}\u0000${offset}`;
  }

  /** The last offset of the empty batch this fetch was answered with, if it was. */
  recall(key: string): number | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.clock() - entry.at > this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.end;
  }

  remember(key: string, end: number): void {
    this.entries.delete(key);
    this.entries.set(key, { end, at: this.clock() });
    // Map keeps insertion order: the first entry is the one least recently remembered.
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
