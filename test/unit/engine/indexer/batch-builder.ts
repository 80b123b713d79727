/**
 * Record batches for the index tests, written with the project's own encoder: data batches
 * (plain, idempotent or transactional) and transaction markers as a broker writes them.
 */
import { Attributes, encodeBatch, type RecordInput } from '../../../../src/protocol/records/batch.js';

export interface DataRecord {
  key: string | null;
  /** null: a tombstone (with a key) or a keyless null value. */
  value: string | null;
  /** Offset delta within the batch (default: its position). */
  delta?: number;
  /** Timestamp delta from the batch's base timestamp (default 0). */
  tsDelta?: number;
}

export interface BatchSpec {
  baseOffset: number;
  timestamp?: number;
  producerId?: number;
  transactional?: boolean;
  codec?: number;
}

function fields(spec: BatchSpec, attributes: number, lastOffsetDelta: number, maxTimestamp: number) {
  return {
    baseOffset: BigInt(spec.baseOffset),
    partitionLeaderEpoch: 0,
    attributes,
    lastOffsetDelta,
    baseTimestamp: BigInt(spec.timestamp ?? 1_700_000_000_000),
    maxTimestamp: BigInt(maxTimestamp),
    producerId: BigInt(spec.producerId ?? -1),
    producerEpoch: spec.producerId === undefined ? -1 : 0,
    baseSequence: spec.producerId === undefined ? -1 : 0,
  };
}

export async function dataBatch(spec: BatchSpec, records: DataRecord[]): Promise<Buffer> {
  const base = spec.timestamp ?? 1_700_000_000_000;
  const inputs: RecordInput[] = records.map((r, i) => ({
    timestampDelta: r.tsDelta ?? 0,
    offsetDelta: r.delta ?? i,
    key: r.key === null ? null : Buffer.from(r.key),
    value: r.value === null ? null : Buffer.from(r.value),
  }));
  const last = Math.max(...inputs.map((r) => r.offsetDelta));
  const maxTs = base + Math.max(...records.map((r) => r.tsDelta ?? 0));
  const attributes = spec.transactional ? Attributes.transactional : 0;
  return encodeBatch(fields(spec, attributes, last, maxTs), inputs, spec.codec ?? 0);
}

/** A COMMIT (type 1) or ABORT (type 0) marker of a transactional producer (kfake writes no value). */
export async function markerBatch(spec: BatchSpec & { producerId: number }, commit: boolean, withValue = true): Promise<Buffer> {
  const key = Buffer.alloc(4);
  key.writeInt16BE(0, 0);
  key.writeInt16BE(commit ? 1 : 0, 2);
  const value = Buffer.alloc(6);
  value.writeInt16BE(0, 0);
  value.writeInt32BE(5, 2);
  const ts = spec.timestamp ?? 1_700_000_000_000;
  return encodeBatch(
    fields(spec, Attributes.transactional | Attributes.control, 0, ts),
    [{ timestampDelta: 0, offsetDelta: 0, key, value: withValue ? value : null }],
    0,
  );
}
