/**
 * Offsets of a share partition that a member got nothing of, acknowledged as gaps on its behalf
 * (docs/carrying.md, "The end of the log"). A ShareFetch answer of a compacted partition may hold
 * nothing a client sees: kcompact's own records (pass markers, copies a group is owed nothing
 * of, release records), records the cleaner removed, or both. Kafka's broker never acquires
 * such offsets (its cleaner leaves no records there, and a share partition with nothing in
 * flight starts at the first batch it reads), so the member gets that answer as Kafka's answer
 * that acquired nothing: no records, no acquired ranges. The store's broker did acquire them for
 * the member, though, and holds them until they are acknowledged; left alone they come back
 * each time the acquisition lock runs out, up to the group's delivery limit, and hold the
 * group's start offset, and so a pass's release, back all that while.
 *
 * The member cannot be left to acknowledge them: librdkafka takes records without a whole
 * message for a message too large (it doubles its fetch size until MSG_SIZE_TOO_LARGE) and
 * acknowledges nothing of an answer without a message, and franz-go releases acquired ranges
 * that come without records, so the broker delivers them again. So the proxy adds GAP
 * acknowledgements of them to the member's next ShareFetch or ShareAcknowledge on the same
 * connection (the same broker, where its share session and the acquisition are), which is what
 * every share consumer sends for an acquired offset without a record. The member is never told:
 * where it acknowledged nothing of the partition itself, the outcome leaves the answer.
 *
 * An acknowledgement fails as a whole for a partition when any of its batches does, so owed gaps
 * go only while the acquisition surely holds (half the lock), never overlap what the member
 * acknowledges itself, and are dropped when the partition leaves the session or the session
 * closes; the broker then delivers the offsets again, and they are owed again.
 */
import { type AckBatch, AckType } from './copy-acks.js';

/** An acquired range, as a ShareFetch answer gives it. */
export interface OwedRange {
  firstOffset: bigint;
  lastOffset: bigint;
}

/** The gaps owed for one share partition. */
export interface OwedPartition {
  topicId: string;
  partition: number;
  batches: AckBatch[];
}

/** A request's acknowledgements of one share partition, as ShareFetch and ShareAcknowledge both carry them. */
export interface AckPartition {
  partitionIndex: number;
  acknowledgementBatches: AckBatch[];
}

export interface AckTopic {
  topicId: string;
  partitions: AckPartition[];
}

/** A share partition owed gaps were added for; `own`: the member acknowledged some of it itself. */
export interface GapsSent {
  topicId: string;
  partition: number;
  own: boolean;
}

interface Owed {
  batch: AckBatch;
  until: number;
}

/** When the broker gives no lock duration (it always does from ShareFetch v1). */
const DEFAULT_LOCK_MS = 30_000;

export interface GapAcksStats {
  /** Offsets acknowledged as gaps on members' behalf. */
  gapsAcknowledged: number;
}

export class GapAcks {
  readonly stats: GapAcksStats = { gapsAcknowledged: 0 };
  /** Per connection, per member, per share partition. Gone with the connection. */
  private readonly owed = new WeakMap<object, Map<string, Map<string, Owed[]>>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The member was given nothing of `ranges` it had acquired, in an answer on `connection`. */
  owe(connection: object, group: string, member: string, topicId: string, partition: number, ranges: readonly OwedRange[], lockMs: number): void {
    if (ranges.length === 0) return;
    let members = this.owed.get(connection);
    if (!members) this.owed.set(connection, (members = new Map()));
    const mk = memberKey(group, member);
    let partitions = members.get(mk);
    if (!partitions) members.set(mk, (partitions = new Map()));
    const pk = partitionKey(topicId, partition);
    const now = this.now();
    const until = now + (lockMs > 0 ? lockMs : DEFAULT_LOCK_MS) / 2;
    const live = (partitions.get(pk) ?? []).filter((o) => o.until > now);
    for (const r of ranges) live.push({ batch: { firstOffset: r.firstOffset, lastOffset: r.lastOffset, acknowledgeTypes: [AckType.Gap] }, until });
    partitions.set(pk, live);
  }

  /** Whether anything is owed on the connection. */
  owesOn(connection: object): boolean {
    return this.owed.has(connection);
  }

  /** Takes what is owed to the member on the connection and still good to send, per share partition. */
  take(connection: object, group: string, member: string): OwedPartition[] {
    const members = this.owed.get(connection);
    const partitions = members?.get(memberKey(group, member));
    if (!members || !partitions) return [];
    members.delete(memberKey(group, member));
    if (members.size === 0) this.owed.delete(connection);
    const now = this.now();
    const out: OwedPartition[] = [];
    for (const [pk, owed] of partitions) {
      const batches = disjoint(owed.filter((o) => o.until > now).map((o) => o.batch));
      if (batches.length === 0) continue;
      const { topicId, partition } = parsePartitionKey(pk);
      out.push({ topicId, partition, batches });
    }
    return out;
  }

  /** The partition left the member's share session on the connection: the broker takes its acquisitions back. */
  forget(connection: object, group: string, member: string, topicId: string, partition: number): void {
    const members = this.owed.get(connection);
    const partitions = members?.get(memberKey(group, member));
    if (!members || !partitions) return;
    partitions.delete(partitionKey(topicId, partition));
    if (partitions.size > 0) return;
    members.delete(memberKey(group, member));
    if (members.size === 0) this.owed.delete(connection);
  }

  /** The member's share session on the connection closed: the broker releases what it had acquired. */
  closed(connection: object, group: string, member: string): void {
    const members = this.owed.get(connection);
    if (!members) return;
    members.delete(memberKey(group, member));
    if (members.size === 0) this.owed.delete(connection);
  }

  /**
   * Adds the owed gaps to a request's acknowledgements, in ascending order and clear of every
   * offset the member acknowledges itself; returns the partitions they went to.
   */
  addTo(topics: AckTopic[], owed: readonly OwedPartition[]): GapsSent[] {
    const sent: GapsSent[] = [];
    for (const o of owed) {
      let topic = topics.find((t) => t.topicId === o.topicId);
      if (!topic) topics.push((topic = { topicId: o.topicId, partitions: [] }));
      let p = topic.partitions.find((x) => x.partitionIndex === o.partition);
      const own = p !== undefined && p.acknowledgementBatches.length > 0;
      const gaps = p ? outside(o.batches, p.acknowledgementBatches) : o.batches;
      if (gaps.length === 0) continue;
      if (!p) topic.partitions.push((p = { partitionIndex: o.partition, acknowledgementBatches: [] }));
      p.acknowledgementBatches = [...p.acknowledgementBatches, ...gaps].sort(byFirst);
      for (const g of gaps) this.stats.gapsAcknowledged += Number(g.lastOffset - g.firstOffset) + 1;
      sent.push({ topicId: o.topicId, partition: o.partition, own });
    }
    return sent;
  }
}

/** Whether the owed gaps of a share partition went in a request the member acknowledged nothing of it in. */
export function hiddenOutcome(sent: readonly GapsSent[], topicId: string, partition: number): boolean {
  return sent.some((s) => !s.own && s.topicId === topicId && s.partition === partition);
}

const memberKey = (group: string, member: string) => `${group}\u0000${member}`;
const partitionKey = (topicId: string, partition: number) => `${topicId}\u0000${partition}`;

function parsePartitionKey(key: string): { topicId: string; partition: number } {
  const at = key.indexOf('\u0000');
  return { topicId: key.slice(0, at), partition: Number(key.slice(at + 1)) };
}

function byFirst(a: AckBatch, b: AckBatch): number {
  return a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0;
}

/** Ascending batches without overlaps: an offset owed twice (delivered to the member again) goes once. */
function disjoint(batches: AckBatch[]): AckBatch[] {
  const out: AckBatch[] = [];
  for (const b of [...batches].sort(byFirst)) {
    const last = out[out.length - 1];
    if (last && b.firstOffset <= last.lastOffset) {
      if (b.lastOffset > last.lastOffset) out[out.length - 1] = { ...last, lastOffset: b.lastOffset };
      continue;
    }
    out.push(b);
  }
  return out;
}

/** The parts of `gaps` (ascending, disjoint) outside every batch of `taken`. */
function outside(gaps: readonly AckBatch[], taken: readonly AckBatch[]): AckBatch[] {
  const out: AckBatch[] = [];
  const cover = [...taken].sort(byFirst);
  for (const g of gaps) {
    let from = g.firstOffset;
    for (const c of cover) {
      if (c.lastOffset < from || c.firstOffset > g.lastOffset) continue;
      if (c.firstOffset > from) out.push({ ...g, firstOffset: from, lastOffset: c.firstOffset - 1n });
      from = c.lastOffset + 1n;
      if (from > g.lastOffset) break;
    }
    if (from <= g.lastOffset) out.push({ ...g, firstOffset: from });
  }
  return out;
}
