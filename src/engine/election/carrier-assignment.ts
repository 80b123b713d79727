/**
 * Who carries each compacted partition when several replicas front one store: the carrier
 * group's leader assigns every partition to exactly one member (carrier-protocol.ts). Balanced
 * (members' counts differ by one at most) and sticky: a partition stays with the member that
 * carried it in the previous generation whenever balance allows, because moving a carrier costs
 * the new one an index of the partition and a pause in its carrying. Deterministic: every member
 * computing it from the same input gets the same answer.
 */

export interface CarriedPartition {
  topic: string;
  partition: number;
}

export interface CarrierMember {
  memberId: string;
  /** What the member carried (from its JoinGroup metadata)... */
  owned: readonly CarriedPartition[];
  /** ...as assigned in this generation; -1 when it carried nothing yet. */
  generation: number;
}

const keyOf = (p: CarriedPartition) => `${p.topic}\u0000${p.partition}`;

function byPartition(a: CarriedPartition, b: CarriedPartition): number {
  return a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition;
}

/**
 * Every partition in `partitions` to exactly one member, by member id. With no members, nothing
 * is assigned. A partition two members both claim (one missed a rebalance) stays with the one
 * whose claim is of the later generation, then the first by member id; a claim on a partition
 * that no longer needs a carrier is dropped.
 */
export function assignCarriers(members: readonly CarrierMember[], partitions: readonly CarriedPartition[]): Map<string, CarriedPartition[]> {
  const out = new Map<string, CarriedPartition[]>();
  if (members.length === 0) return out;
  const ordered = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
  const wanted = new Map<string, CarriedPartition>();
  for (const p of [...partitions].sort(byPartition)) wanted.set(keyOf(p), { topic: p.topic, partition: p.partition });

  // The claims that stand: one member per partition, partitions that still need a carrier.
  const claimedBy = new Map<string, string>();
  const claims = new Map<string, CarriedPartition[]>();
  for (const m of ordered) claims.set(m.memberId, []);
  const byGeneration = [...ordered].sort((a, b) => b.generation - a.generation);
  for (const m of byGeneration) {
    const mine = claims.get(m.memberId)!;
    for (const p of [...m.owned].sort(byPartition)) {
      const key = keyOf(p);
      if (!wanted.has(key) || claimedBy.has(key)) continue;
      claimedBy.set(key, m.memberId);
      mine.push(wanted.get(key)!);
    }
  }

  // Quotas: floor(n/m) each, one more for n % m members, given first to those that claim most, so
  // that as many claims as balance allows are kept.
  const n = wanted.size;
  const base = Math.floor(n / ordered.length);
  let extra = n % ordered.length;
  const quota = new Map<string, number>();
  const byClaims = [...ordered].sort((a, b) => claims.get(b.memberId)!.length - claims.get(a.memberId)!.length);
  for (const m of byClaims) {
    const more = extra > 0 && claims.get(m.memberId)!.length > base ? 1 : 0;
    extra -= more;
    quota.set(m.memberId, base + more);
  }
  // Quotas one more that no member's claims fill go to the members in id order.
  for (const m of ordered) {
    if (extra === 0) break;
    if (quota.get(m.memberId) === base) {
      quota.set(m.memberId, base + 1);
      extra--;
    }
  }

  const assigned = new Set<string>();
  for (const m of ordered) {
    const kept = claims.get(m.memberId)!.slice(0, quota.get(m.memberId));
    for (const p of kept) assigned.add(keyOf(p));
    out.set(m.memberId, kept);
  }
  // What is left goes to the members with room, in partition order, each to the member furthest below its quota.
  for (const [key, p] of wanted) {
    if (assigned.has(key)) continue;
    let best: CarrierMember | undefined;
    let bestRoom = 0;
    for (const m of ordered) {
      const room = quota.get(m.memberId)! - out.get(m.memberId)!.length;
      if (room > bestRoom) {
        best = m;
        bestRoom = room;
      }
    }
    out.get(best!.memberId)!.push(p);
  }
  for (const list of out.values()) list.sort(byPartition);
  return out;
}
