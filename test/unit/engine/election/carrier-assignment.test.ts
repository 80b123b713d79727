import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assignCarriers, type CarriedPartition, type CarrierMember } from '../../../../src/engine/election/carrier-assignment.js';
import { seededRng as rng } from '../../protocol/sample-body.js';

const key = (p: CarriedPartition) => `${p.topic}-${p.partition}`;

function shuffled<T>(xs: readonly T[], r: () => number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function randomCase(r: () => number, maxMembers: number, maxPartitions: number) {
  const topics = ['a', 'b', 'c'].slice(0, 1 + Math.floor(r() * 3));
  const all: CarriedPartition[] = [];
  for (const topic of topics) for (let p = 0; p < Math.floor(r() * maxPartitions); p++) all.push({ topic, partition: p });
  const partitions = all.filter(() => r() < 0.85);
  const members: CarrierMember[] = Array.from({ length: Math.floor(r() * maxMembers) }, (_, i) => ({
    memberId: `m-${Math.floor(r() * 1000)}-${i}`,
    generation: Math.floor(r() * 4) - 1,
    // Claims on partitions that may be gone, and now and then on one another member claims too.
    owned: all.filter(() => r() < 0.3),
  }));
  return { partitions, members };
}

/** The claims that stand: each partition still wanted, to the claimant of the latest generation, then the first by member id. */
function standing(members: readonly CarrierMember[], partitions: readonly CarriedPartition[]): Map<string, string> {
  const wanted = new Set(partitions.map(key));
  const owner = new Map<string, string>();
  const order = [...members].sort((a, b) => b.generation - a.generation || (a.memberId < b.memberId ? -1 : 1));
  for (const m of order) for (const p of m.owned) if (wanted.has(key(p)) && !owner.has(key(p))) owner.set(key(p), m.memberId);
  return owner;
}

function kept(assignment: Map<string, CarriedPartition[]>, owner: Map<string, string>): number {
  let n = 0;
  for (const [member, ps] of assignment) for (const p of ps) if (owner.get(key(p)) === member) n++;
  return n;
}

/** The most standing claims any balanced assignment keeps, by trying them all. */
function bestKept(members: readonly CarrierMember[], partitions: readonly CarriedPartition[]): number {
  const owner = standing(members, partitions);
  const ids = members.map((m) => m.memberId);
  const n = partitions.length;
  const lo = Math.floor(n / ids.length);
  let best = -1;
  const counts = new Array<number>(ids.length).fill(0);
  const walk = (i: number, keptSoFar: number) => {
    if (i === n) {
      if (counts.every((c) => c === lo || c === lo + 1)) best = Math.max(best, keptSoFar);
      return;
    }
    for (let m = 0; m < ids.length; m++) {
      if (counts[m]! > lo) continue;
      counts[m]!++;
      walk(i + 1, keptSoFar + (owner.get(key(partitions[i]!)) === ids[m] ? 1 : 0));
      counts[m]!--;
    }
  };
  walk(0, 0);
  return best;
}

test('every partition gets exactly one carrier, counts within one, as many carriers kept as balance allows', () => {
  const r = rng(18);
  for (let run = 0; run < 400; run++) {
    const { partitions, members } = randomCase(r, 4, 3);
    const out = assignCarriers(members, partitions);
    const why = `case ${run}: ${JSON.stringify({ partitions, members })}`;
    if (members.length === 0) {
      assert.equal(out.size, 0, why);
      continue;
    }
    assert.deepEqual([...out.keys()].sort(), members.map((m) => m.memberId).sort(), why);
    const given = [...out.values()].flat().map(key);
    assert.deepEqual([...given].sort(), partitions.map(key).sort(), why);
    const sizes = [...out.values()].map((ps) => ps.length);
    assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, why);
    if (partitions.length <= 7) assert.equal(kept(out, standing(members, partitions)), bestKept(members, partitions), why);
  }
});

test('a partition two members claim stays with the claim of the later generation', () => {
  const p = { topic: 't', partition: 0 };
  const out = assignCarriers(
    [
      { memberId: 'a', owned: [p], generation: 3 },
      { memberId: 'b', owned: [p, { topic: 't', partition: 1 }], generation: 4 },
    ],
    [p, { topic: 't', partition: 1 }],
  );
  // b's claims stand (the later generation); balance leaves it one of them, and a takes the other.
  assert.deepEqual(Object.fromEntries(out), { a: [{ topic: 't', partition: 1 }], b: [p] });
});

test('the same answer whatever order the input comes in', () => {
  const r = rng(19);
  for (let run = 0; run < 200; run++) {
    const { partitions, members } = randomCase(r, 6, 8);
    const again = assignCarriers(
      shuffled(members, r).map((m) => ({ ...m, owned: shuffled(m.owned, r) })),
      shuffled(partitions, r),
    );
    assert.deepEqual(again, assignCarriers(members, partitions), `case ${run}`);
  }
});

test('a settled group keeps its assignment; a member joining takes only its share, a member leaving hands on only its own', () => {
  const partitions = Array.from({ length: 12 }, (_, p) => ({ topic: 't', partition: p }));
  const first = assignCarriers(
    ['a', 'b', 'c'].map((memberId) => ({ memberId, owned: [], generation: -1 })),
    partitions,
  );
  const members = (ids: string[]) => ids.map((memberId) => ({ memberId, owned: first.get(memberId) ?? [], generation: 1 }));
  assert.deepEqual(assignCarriers(members(['a', 'b', 'c']), partitions), first);

  const joined = assignCarriers(members(['a', 'b', 'c', 'd']), partitions);
  const moved = (a: Map<string, CarriedPartition[]>) =>
    partitions.filter((p) => ![...a].some(([m, ps]) => first.get(m)?.some((q) => key(q) === key(p)) && ps.some((q) => key(q) === key(p))));
  assert.equal(joined.get('d')!.length, 3);
  assert.equal(moved(joined).length, 3, 'only the newcomer\u2019s share moves');

  const left = assignCarriers(members(['a', 'c']), partitions);
  assert.deepEqual(moved(left).map(key).sort(), first.get('b')!.map(key).sort(), 'only the leaver\u2019s partitions move');
});
