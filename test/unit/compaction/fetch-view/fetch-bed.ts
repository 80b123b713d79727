/**
 * A fetch view over fake logs for the fetch-view tests: topic "c" (compacted, partitions 0 and
 * 1, by name and by id) and "plain" (not compacted), a settable clock, and a reader that moves
 * as Java's consumer does.
 */
import assert from 'node:assert/strict';
import { createFetchView, type FetchView } from '../../../../src/compaction/fetch-view/fetch-view.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import { configView, FakeIndex, FakeLog, FakeUpstream, indexView, log, readBatches, roundTrip, type FetchSpec, type SeenRecord } from './fake-log.js';

export const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';
export const OTHER_ID = 'AAAAAAAAAAAAAAAAAAAAAg';

export interface Bed {
  view: FetchView;
  upstream: FakeUpstream;
  logs: Record<string, FakeLog>;
  indexes: Record<string, FakeIndex>;
  topicIds: TopicIds;
  now: { ms: number };
}

/** Topic "c" (compacted, partitions 0 and 1) and "plain" (not compacted). */
export async function bed(
  build: (logs: { c0: FakeLog; c1: FakeLog; plain: FakeLog }) => Promise<{ c0: FakeIndex; c1?: FakeIndex }>,
  /** The view cache is off unless asked for: tests that stand for a clean change a FakeIndex in place. */
  opts: { cacheBytes?: number } = {},
): Promise<Bed> {
  const logs = { c0: new FakeLog(), c1: new FakeLog(), plain: new FakeLog() };
  const idx = await build(logs);
  const indexes: Record<string, FakeIndex> = { 'c-0': idx.c0 };
  if (idx.c1) indexes['c-1'] = idx.c1;
  const topicIds = new TopicIds();
  topicIds.learn('c', TOPIC_ID);
  topicIds.learn('plain', OTHER_ID);
  const upstream = new FakeUpstream({ 'c-0': logs.c0, 'c-1': logs.c1, 'plain-0': logs.plain }, { [TOPIC_ID]: 'c', [OTHER_ID]: 'plain' });
  const now = { ms: 1_000_000 };
  const view = createFetchView({
    config: configView(['c']),
    index: indexView(indexes),
    topicIds,
    upstream,
    log,
    clock: () => now.ms,
    cacheBytes: opts.cacheBytes ?? 0,
  });
  return { view, upstream, logs: { 'c-0': logs.c0, 'c-1': logs.c1, 'plain-0': logs.plain }, indexes, topicIds, now };
}

/** Many small batches of superseded records with a few survivors scattered among them. */
export async function scattered(log: FakeLog, batches: number, perBatch: number, codec = 0): Promise<void> {
  for (let i = 0; i < batches; i++) await log.append({ count: perBatch, codec: (codec + i) % 5 });
}

export function spec(fetchOffset: number, over: Partial<FetchSpec> = {}, partitionMaxBytes?: number): FetchSpec {
  return { topics: [{ topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset, partitionMaxBytes }] }], ...over };
}

/**
 * Reads like Java's consumer: position moves to the last complete batch's last offset + 1, until
 * it reaches the high watermark the answers give (the upstream's, or where the log ends for
 * clients when nothing they see lies past that: index-view.ts LogEnd).
 */
export async function readLikeJava(b: Bed, from: number, over: Partial<FetchSpec> = {}, partitionMaxBytes?: number) {
  let position = from;
  const seen: SeenRecord[] = [];
  let fetches = 0;
  const upstreamEnd = b.logs['c-0']!.end;
  let hw = upstreamEnd;
  while (position < hw && fetches < 1000) {
    fetches++;
    const { response } = await roundTrip(b.view, b.upstream, spec(position, over, partitionMaxBytes));
    const p = response.responses[0].partitions[0];
    assert.equal(p.errorCode, 0);
    assert.ok(p.highWatermark <= BigInt(upstreamEnd), 'never past the upstream’s high watermark');
    hw = Number(p.highWatermark);
    const out = await readBatches(p.records);
    for (const r of out.records) if (r.offset >= position) seen.push(r);
    const last = out.batches[out.batches.length - 1];
    if (last && last.last + 1 > position) position = last.last + 1;
  }
  return { seen, fetches, position, highWatermark: hw };
}
