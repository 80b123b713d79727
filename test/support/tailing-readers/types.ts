/**
 * The vocabulary of tail readers (issue 33's soak test): a client that reads one partition from
 * its start, says when it has seen the record at the high watermark it asked for at start minus
 * one, then waits at the end of the partition until a record with a given key. Every client
 * reports the same events (test/peers/README.md, "Tail readers").
 */

/** assign: no group; group: subscribed in a consumer group that commits; share: a share group (KIP-932). */
export type TailMode = 'assign' | 'group' | 'share';
export type Isolation = 'read_uncommitted' | 'read_committed';

/** What a client prints, one JSON line each. */
export type ClientEvent =
  /** The partition's end offset at start: ListOffsets LATEST at the isolation level. */
  | { event: 'start'; highWatermark: number }
  /** The record at highWatermark - 1 (or later) arrived, `records` records in, `ms` after start; offset -1 when the partition was empty. */
  | { event: 'caughtUp'; offset: number; records: number; ms: number }
  | { event: 'record'; offset: number; key: string | null; value: string | null }
  /** Anything the client reported as an error: a poll's error, an exception, an error callback or log line. */
  | { event: 'error'; message: string }
  /** librdkafka's "Increasing max fetch bytes" debug line: an answer it could not take a record from. */
  | { event: 'fetchGrew'; message: string }
  /** The until-key record arrived at this offset; the client then ends (exit 0). */
  | { event: 'done'; offset: number }
  /** The client's own deadline passed first (exit 1). */
  | { event: 'timeout' };

/** Added by the harness: the client has ended (an in-process reader's end has code 0 after done, else 1). */
export interface ExitEvent {
  event: 'exit';
  code: number | null;
  signal: string | null;
}

/** An event with when the harness saw it (ms since the epoch; a spawned client's output is read every 100 ms). */
export type TailEvent = (ClientEvent | ExitEvent) & { at: number };

export type TailEventOf<K extends TailEvent['event']> = Extract<TailEvent, { event: K }>;

export interface TailDriver {
  readonly id: 'franz-go' | 'librdkafka' | 'kafka-python' | 'java' | 'kafkajs' | 'kcat';
  readonly name: string;
  /** The modes the client reads in; 'share' only where it has a share consumer. */
  readonly modes: readonly TailMode[];
  readonly isolations: readonly Isolation[];
  /** Why a mode is missing. */
  readonly unsupported: Partial<Record<TailMode, string>>;
  /** Whether the client reports its fetch-size growth (fetchGrew): the librdkafka ones. */
  readonly reportsFetchGrowth: boolean;
  /** How the client does something its own way. */
  readonly notes: string[];
}

export interface TailOptions {
  bootstrap: string;
  topic: string;
  /** 0 unless set. */
  partition?: number;
  mode: TailMode;
  /** The consumer group of 'group' or the share group of 'share'; a fresh one when absent. */
  group?: string;
  /** read_uncommitted unless set; for 'share' the group's share.isolation.level. */
  isolation?: Isolation;
  /** The reader ends at the first record with this key. */
  untilKey: string;
  /** The client's own overall deadline (120 s unless set). */
  timeoutMs?: number;
}

export interface TailReader {
  readonly driver: TailDriver;
  readonly options: Readonly<TailOptions>;
  /** "franz-go (kgo) group read_committed" and the like, for messages. */
  readonly label: string;
  /** Every event so far, in order; it grows while the reader runs. */
  readonly events: readonly TailEvent[];
  /**
   * The first event (from the start) that `match` accepts, waiting for it with a deadline. Rejects
   * when the deadline passes or the reader ends without one, with the reader's last events and
   * stderr in the message.
   */
  waitFor<E extends TailEvent>(match: (e: TailEvent) => e is E, timeoutMs: number): Promise<E>;
  waitFor(match: (e: TailEvent) => boolean, timeoutMs: number): Promise<TailEvent>;
  errors(): TailEventOf<'error'>[];
  fetchGrew(): TailEventOf<'fetchGrew'>[];
  records(): TailEventOf<'record'>[];
  /** The last lines the client wrote to stderr ('' for an in-process client). */
  stderrTail(lines?: number): string;
  /** Ends the client (if it has not ended) and resolves once it has; its exit event is then in events. */
  stop(): Promise<void>;
}
