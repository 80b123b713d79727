/**
 * Acknowledgements of records a share group got from carried copies (docs/semantics.md, "Share
 * groups and carried partitions"). The broker acquired one offset, the copy's, for the member;
 * the member got the copy's records at their original offsets and acknowledges each of them.
 * The broker must get one acknowledgement of the copy's offset, once the member has acknowledged
 * every record it got from it: ACCEPT (a gap counts as one) when it accepted all, RELEASE when it
 * released any (the copy, every record of it, is delivered again: the one way a share group can
 * tell the copies from Kafka's log), else REJECT. RENEW goes on at once, once per copy.
 *
 * Kept per member, share partition and copy, in this replica: a member's share session, and so
 * every acknowledgement of what it got, goes through the replica it connected to. A member's
 * state goes when it closes its share session, or when it has not acknowledged for longer than
 * any acquisition lock lasts (the broker has taken the copy back by then).
 */

/** Kafka's acknowledge types (ShareFetch and ShareAcknowledge). */
export const AckType = { Gap: 0, Accept: 1, Release: 2, Reject: 3, Renew: 4 } as const;

/** An acknowledgement batch as both ShareFetch and ShareAcknowledge carry it. */
export interface AckBatch {
  firstOffset: bigint;
  lastOffset: bigint;
  acknowledgeTypes: number[];
}

interface CopyState {
  copy: number;
  offsets: readonly number[];
  pending: Set<number>;
  released: boolean;
  rejected: boolean;
}

interface MemberPartition {
  /** Original offset to the copy its record came from. */
  byOffset: Map<number, CopyState>;
  min: number;
  max: number;
  touched: number;
}

/** Longer than any acquisition lock a share group can be configured with (share.record.lock.duration.ms is at most an hour). */
const FORGET_AFTER_MS = 2 * 60 * 60 * 1000;

export interface CopyAcksStats {
  /** Copies whose records a member has acknowledged, acknowledged to the broker as one. */
  copiesAcknowledged: number;
}

export class CopyAcks {
  readonly stats: CopyAcksStats = { copiesAcknowledged: 0 };
  private readonly members = new Map<string, MemberPartition>();
  private lastSweep: number;

  constructor(private readonly now: () => number = Date.now) {
    this.lastSweep = now();
  }

  /** Notes that the member got `offsets` (ascending) from the copy at `copy`. */
  delivered(group: string, member: string, topicId: string, partition: number, copy: number, offsets: readonly number[]): void {
    if (offsets.length === 0) return;
    this.sweep();
    const key = keyOf(group, member, topicId, partition);
    let m = this.members.get(key);
    if (!m) this.members.set(key, (m = { byOffset: new Map(), min: Infinity, max: -Infinity, touched: 0 }));
    m.touched = this.now();
    const state: CopyState = { copy, offsets, pending: new Set(offsets), released: false, rejected: false };
    for (const o of offsets) m.byOffset.set(o, state);
    m.min = Math.min(m.min, offsets[0]!);
    m.max = Math.max(m.max, offsets[offsets.length - 1]!);
  }

  /** Whether the member has acknowledgements to translate for the share partition. */
  holds(group: string, member: string, topicId: string, partition: number): boolean {
    return this.members.has(keyOf(group, member, topicId, partition));
  }

  /**
   * The acknowledgement batches to send in place of the member's: those of records it got from
   * copies become one acknowledgement per copy, once the copy is done; the rest stay as they were.
   * Ascending and without overlaps, as the member's were.
   */
  translate(group: string, member: string, topicId: string, partition: number, batches: readonly AckBatch[]): AckBatch[] {
    const m = this.members.get(keyOf(group, member, topicId, partition));
    if (!m) return [...batches];
    m.touched = this.now();
    const out: AckBatch[] = [];
    const renewed = new Set<CopyState>();
    for (const b of batches) {
      const first = Number(b.firstOffset);
      const last = Number(b.lastOffset);
      if (last < m.min || first > m.max) {
        out.push(b);
        continue;
      }
      let runFirst = -1;
      let runTypes: number[] = [];
      const endRun = () => {
        if (runFirst < 0) return;
        const uniform = runTypes.every((t) => t === runTypes[0]);
        out.push({ firstOffset: BigInt(runFirst), lastOffset: BigInt(runFirst + runTypes.length - 1), acknowledgeTypes: uniform ? [runTypes[0]!] : runTypes });
        runFirst = -1;
        runTypes = [];
      };
      for (let o = first; o <= last; o++) {
        const type = b.acknowledgeTypes.length === 1 ? b.acknowledgeTypes[0]! : b.acknowledgeTypes[o - first]!;
        const state = m.byOffset.get(o);
        if (!state) {
          if (runFirst < 0) runFirst = o;
          runTypes.push(type);
          continue;
        }
        endRun();
        if (type === AckType.Renew) {
          if (!renewed.has(state)) out.push(single(state.copy, AckType.Renew));
          renewed.add(state);
          continue;
        }
        // A record acknowledged again before its copy is settled counts once.
        if (!state.pending.delete(o)) continue;
        if (type === AckType.Release) state.released = true;
        else if (type === AckType.Reject) state.rejected = true;
        if (state.pending.size === 0) {
          for (const d of state.offsets) m.byOffset.delete(d);
          out.push(single(state.copy, state.released ? AckType.Release : state.rejected ? AckType.Reject : AckType.Accept));
          this.stats.copiesAcknowledged++;
        }
      }
      endRun();
    }
    if (m.byOffset.size === 0) this.members.delete(keyOf(group, member, topicId, partition));
    return out.sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  }

  /** The member closed its share session: the broker takes back what it had acquired. */
  closed(group: string, member: string): void {
    const prefix = `${group}\u0000${member}\u0000`;
    for (const key of this.members.keys()) if (key.startsWith(prefix)) this.members.delete(key);
  }

  /** Members tracked, for tests and metrics. */
  get size(): number {
    return this.members.size;
  }

  private sweep(): void {
    const now = this.now();
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [key, m] of this.members) if (now - m.touched > FORGET_AFTER_MS) this.members.delete(key);
  }
}

function single(offset: number, type: number): AckBatch {
  return { firstOffset: BigInt(offset), lastOffset: BigInt(offset), acknowledgeTypes: [type] };
}

const keyOf = (group: string, member: string, topicId: string, partition: number) => `${group}\u0000${member}\u0000${topicId}\u0000${partition}`;
