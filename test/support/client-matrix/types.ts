/**
 * The client matrix's vocabulary: the operations every client is put through, what the harness
 * hands a client for each (a fixture) and what the client reports back (a run), and the driver
 * each client family implements. The checks themselves are in operations/.
 */
import type { RecordView } from '../summary.js';

export type Operation = 'produce' | 'group' | 'transactions' | 'configs' | 'compactedRead' | 'shareRead';

/** A key and a value as UTF-8 text; null for null. */
export interface KeyValue {
  key: string | null;
  value: string | null;
}

/** The bed's generated records (genRecord in summary.ts): the flags franzclient, ck.py and kp.py take. */
export interface Generated {
  start: number;
  count: number;
  keys: number;
  valueSize: number;
  tombstoneEvery: number;
}

export interface ProduceFixture {
  topic: string;
  /** The records to produce, in order, to the topic's one partition... */
  records: KeyValue[];
  /** ...which are these generated records, for clients with the bed's generator. */
  generated: Generated;
  /**
   * Whether the producer is idempotent; absent, the client's own default. The drivers of clients
   * idempotent by default (Java, librdkafka, kafka-python) honor false: a store without producer
   * ids refuses them otherwise.
   */
  idempotence?: boolean;
}

export interface ProduceRun {
  /** Per partition, what the client was told of its records (absent: it cannot say). */
  partitions?: Record<string, { count: number; firstOffset: number; lastOffset: number }>;
  /** How the client reported the refusal of a keyless record; null when it was accepted. */
  keyless: string | null;
}

export interface GroupFixture {
  topic: string;
  group: string;
  /** Records already in the topic; the client reads them all, then commits. */
  count: number;
}

export interface RecordsRun {
  records: RecordView[];
}

export interface TransactionsFixture {
  topic: string;
  transactionalId: string;
  /** In order; the records of aborted ones have values starting with ABORTED_MARK. */
  transactions: { commit: boolean; records: KeyValue[] }[];
  /** The same records as the bed's generator makes them (ck.py txn and its twins). */
  generated: Omit<Generated, 'count' | 'tombstoneEvery'> & { transactions: number; perTxn: number };
}

/** The values of aborted transactions' records start with this (ck.py's ABORTED_MARK). */
export const ABORTED_MARK = 'aborted-';

export interface ConfigsFixture {
  topic: string;
  partitions: number;
  create: Record<string, string>;
  alter: Record<string, string>;
}

export interface ConfigsRun {
  /** IncrementalAlterConfigs, or AlterConfigs where the client has only that. */
  api: string;
  /** What DescribeConfigs said of the configs named in create and alter, after each step. */
  created: Record<string, string | null>;
  altered: Record<string, string | null>;
}

export interface CompactedReadFixture {
  topic: string;
  /** What a reader from offset 0 must see: the survivors, at their original offsets. */
  expected: RecordView[];
  highWatermark: number;
  /** How long a client keeps reading after the last survivor (it must wait, not spin). */
  idleMs: number;
}

/** What a client that gives its position reports beside the records of a read. */
export interface ReadRun extends RecordsRun {
  position?: number;
}

export interface ShareReadFixture {
  topic: string;
  group: string;
  /** The group's share.isolation.level. */
  isolation: 'read_uncommitted' | 'read_committed';
  /** Records to accept at least; the read goes on until none came for idleMs. */
  expected: number;
  idleMs: number;
  /** Release each record at its first delivery (the group delivers it again). */
  release?: boolean;
  /** Members of the group reading side by side (one unless the client says otherwise). */
  members?: number;
  /**
   * First a member of its own (numbered `members`) reads alone and leaves the group as soon as it
   * got records, acknowledging none; the others then read.
   */
  leave?: boolean;
}

/** A record a share group delivered, and how many times the group had delivered it. */
export interface ShareDelivery extends RecordView {
  deliveryCount: number;
  /** Which member got it, where the client ran several. */
  member?: number;
}

/** The share group's state of partition 0 (DescribeShareGroupOffsets). */
export interface ShareOffsets {
  startOffset: number;
  lag: number;
}

/** One client family driven through kcompact. Methods of unsupported operations are absent. */
export interface ClientDriver {
  readonly id: string;
  /** As the matrix shows it, e.g. "Java kafka-clients". */
  readonly name: string;
  /** Operations the client cannot do at all, and why (a footnote in the matrix). */
  readonly unsupported: Partial<Record<Operation, string>>;
  /** How the client passes where it does so its own way (a footnote in the matrix). */
  readonly notes: Partial<Record<Operation, string>>;
  /** The client's version, measured from the installed client. */
  version(): Promise<string>;
  produce?(bootstrap: string, f: ProduceFixture): Promise<ProduceRun>;
  group?(bootstrap: string, f: GroupFixture): Promise<RecordsRun>;
  /** `delivered(n)` resolves once the topic's log holds n records (a client that aborts by signal waits for it). */
  transactions?(bootstrap: string, f: TransactionsFixture, delivered: (records: number) => Promise<void>): Promise<RecordsRun>;
  configs?(bootstrap: string, f: ConfigsFixture): Promise<ConfigsRun>;
  compactedRead?(bootstrap: string, f: CompactedReadFixture): Promise<ReadRun>;
  /** Reads the topic in a share group (KIP-932), from its earliest offset. */
  shareRead?(bootstrap: string, f: ShareReadFixture): Promise<{ records: ShareDelivery[] }>;
  /** The share group's state, asked with the client's admin API. */
  shareOffsets?(bootstrap: string, group: string, topic: string): Promise<ShareOffsets>;
  close?(): Promise<void>;
}
