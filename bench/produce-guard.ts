/*
 * What the produce guard costs per Produce request of 1 MiB of records, uncompressed and lz4,
 * for small and larger records: a request for a topic that is not compacted (the fast path), one
 * for a compacted topic whose records all have keys (decoded, then forwarded untouched), and one
 * holding a keyless record (answered by the proxy). The guard runs alone in a FilterChain, as it
 * runs in the proxy's (which adds the chain's own cost). Informative, not a test.
 *   node dist/bench/produce-guard.js [seconds-per-case]
 */
import { createProduceGuard } from '../src/compaction/produce-guard/produce-guard.js';
import type { TopicConfigView, TopicPolicy } from '../src/engine/api/topic-policy.js';
import { ApiKey, encodeRequestFrame } from '../src/protocol/messages.js';
import { decodeRequestHeader } from '../src/protocol/headers.js';
import { encodeBatch, type RecordInput } from '../src/protocol/records/batch.js';
import { Compression } from '../src/protocol/records/compression.js';
import type { Filter } from '../src/proxy/filter/filter.js';
import { FilterChain } from '../src/proxy/filter/filter-chain.js';
import { TopicIds } from '../src/proxy/topic-ids.js';
import { createLogger } from '../src/common/log.js';

const secondsPerCase = Number(process.argv[2] ?? 1.5);
const MIB = 1 << 20;

function config(compacted: string[]): TopicConfigView {
  const set = new Set(compacted);
  return { compacted: (t) => (set.has(t) ? ({ compact: true } as TopicPolicy) : undefined), compactedTopics: () => [...set], onChange: () => () => undefined };
}

/** About 1 MiB of records before compression: JSON-like values that lz4 halves. */
function records(valueSize: number, keyless: boolean): RecordInput[] {
  const count = Math.floor(MIB / (valueSize + 30));
  let seed = 7;
  const token = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed.toString(16).padStart(8, '0');
  };
  return Array.from({ length: count }, (_, i) => {
    let value = `{"id":${i}`;
    while (value.length < valueSize) value += `,"f":"${token()}"`;
    return {
      timestampDelta: i,
      offsetDelta: i,
      key: keyless && i === count - 1 ? null : Buffer.from(`user-${i % 5000}`),
      value: Buffer.from(value.slice(0, valueSize)),
    };
  });
}

async function produceFrame(topic: string, codec: number, valueSize: number, keyless: boolean): Promise<Buffer> {
  const recs = records(valueSize, keyless);
  const batch = await encodeBatch(
    {
      baseOffset: 0n,
      partitionLeaderEpoch: -1,
      attributes: 0,
      lastOffsetDelta: recs.length - 1,
      baseTimestamp: 1_700_000_000_000n,
      maxTimestamp: 1_700_000_000_000n,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
    },
    recs,
    codec,
  );
  return encodeRequestFrame(
    { apiKey: ApiKey.Produce, apiVersion: 9, correlationId: 1, clientId: 'bench' },
    { transactionalId: null, acks: -1, timeoutMs: 1000, topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }] },
  );
}

async function measure(label: string, guard: Filter, frame: Buffer): Promise<void> {
  const header = decodeRequestHeader(frame.subarray(4));
  const chain = new FilterChain([guard]);
  const once = () => chain.request(frame, header, true);
  for (let i = 0; i < 10; i++) await once();
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(secondsPerCase * 1e9));
  let runs = 0;
  let now = start;
  while (now < deadline) {
    await once();
    runs++;
    now = process.hrtime.bigint();
  }
  const seconds = Number(now - start) / 1e9;
  const perRequest = (seconds / runs) * 1e6;
  console.log(`${label.padEnd(64)} ${perRequest.toFixed(1).padStart(9)} µs/request ${((frame.length * runs) / seconds / 1e6).toFixed(0).padStart(7)} MB/s`);
}

const log = createLogger({ component: 'bench' });
const topicIds = new TopicIds();
const guarded = createProduceGuard({ config: config(['compacted']), topicIds, log });
const unused = createProduceGuard({ config: config([]), topicIds, log });

for (const valueSize of [100, 1000]) {
  for (const [codec, name] of [
    [Compression.None, 'uncompressed'],
    [Compression.Lz4, 'lz4'],
  ] as const) {
    const what = `1 MiB ${name}, ${valueSize}-byte values`;
    await measure(`${what}: no compacted topic anywhere`, unused, await produceFrame('plain', codec, valueSize, false));
    await measure(`${what}: topic not compacted`, guarded, await produceFrame('plain', codec, valueSize, false));
    await measure(`${what}: compacted, every record keyed`, guarded, await produceFrame('compacted', codec, valueSize, false));
    await measure(`${what}: compacted, one keyless record`, guarded, await produceFrame('compacted', codec, valueSize, true));
  }
}
