/**
 * The read routes: a key's latest value (GET /v1/topics/{topic}/keys/{key}), waiting for the index
 * to reach a write the caller made (read-your-writes), and what the table API knows of a topic
 * (GET /v1/topics/{topic}).
 */
import { TableError, type TableRecord } from '../engine/api/table-reads.js';
import { ApiError, unavailable } from './api-error.js';
import { keyPartition } from './key-partition.js';
import { recordJson, type Encoding } from './record-json.js';
import { etagOf, JsonText, type TableAnswer } from './table-answer.js';
import { readsOf, type TableDeps } from './table-deps.js';
import type { GetKey, TopicInfo } from './table-request.js';

/**
 * Each record's answer as sent, per encoding: the engine client hands out the same record for a
 * warm key until its partition's index moves, so a warm GET renders nothing.
 */
const rendered = new WeakMap<TableRecord, Partial<Record<Encoding, TableAnswer>>>();

function answerOf(record: TableRecord, encoding: Encoding): TableAnswer {
  let byEncoding = rendered.get(record);
  if (!byEncoding) rendered.set(record, (byEncoding = {}));
  return (byEncoding[encoding] ??= {
    status: 200,
    body: new JsonText(JSON.stringify(recordJson(record, encoding)) + '\n'),
    headers: { etag: etagOf(record.offset) },
  });
}

export async function getKey(deps: TableDeps, req: GetKey): Promise<TableAnswer> {
  const reads = readsOf(deps);
  const partition = await keyPartition(deps.partitions, req.topic, req.key, req.partition);
  // The index has read offset N once it is at N + 1.
  const atLeast = req.minOffset === undefined ? 0 : req.minOffset + 1;
  const answer = await reads.latest(req.topic, partition, req.key, atLeast, req.timeoutMs);
  if (answer.behind) {
    throw unavailable(
      `the index of ${req.topic}-${partition} has read up to offset ${answer.indexedTo}, not yet past min_offset ${req.minOffset} (waited ${req.timeoutMs} ms)`,
      'retry after Retry-After seconds, or with a longer timeout_ms',
      { partition, indexedTo: answer.indexedTo },
    );
  }
  if (!answer.record) {
    throw new ApiError(404, `no value for this key in ${req.topic}-${partition}`, 'the key was never written, or its latest record is a tombstone', {
      partition,
      indexedTo: answer.indexedTo,
    });
  }
  return answerOf(answer.record, req.encoding);
}

export async function topicInfo(deps: TableDeps, req: TopicInfo): Promise<TableAnswer> {
  const reads = readsOf(deps);
  const partitions = await deps.partitions.count(req.topic);
  let compacted = true;
  try {
    // No records asked for: only whether the index serves the topic.
    await reads.changes(req.topic, 0, 0, null, 0, 0);
  } catch (err) {
    if (!(err instanceof TableError && err.status === 409)) throw err;
    compacted = false;
  }
  return { status: 200, body: { topic: req.topic, partitions, compacted } };
}
