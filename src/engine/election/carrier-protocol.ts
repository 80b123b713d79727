/**
 * The bytes replicas exchange through the store's group coordinator to elect carriers
 * (JoinGroup metadata, SyncGroup assignments), under a protocol type of kcompact's own so that no
 * consumer group and no Connect cluster can be mistaken for the carrier group or join it. The
 * layout follows Kafka's consumer protocol: an int16 version first; a reader takes the fields of
 * the versions it knows and ignores what a later version appends, so replicas of two versions can
 * be in one group during a rolling upgrade.
 *
 *   metadata   = version int16, generation int32, owned [topic string, partitions [int32]]
 *   assignment = version int16, carried [topic string, partitions [int32]]
 */
import { ProtocolError } from '../../protocol/errors.js';
import { Reader } from '../../protocol/wire/reader.js';
import { Writer } from '../../protocol/wire/writer.js';
import type { CarriedPartition } from './carrier-assignment.js';

export const CARRIER_PROTOCOL_TYPE = 'kcompact';
/** The one assignment strategy the members offer (JoinGroup's protocol name). */
export const CARRIER_PROTOCOL_NAME = 'sticky-carriers';
const VERSION = 0;

export interface CarrierMetadata {
  /** The generation in which `owned` was assigned; -1 when the member carries nothing yet. */
  generation: number;
  owned: CarriedPartition[];
}

export function encodeCarrierMetadata(m: CarrierMetadata): Buffer {
  const w = new Writer(64);
  w.int16(VERSION);
  w.int32(m.generation);
  writePartitions(w, m.owned);
  return w.finish();
}

/** A member's metadata; ProtocolError when it is not one (another protocol's member, or garbage). */
export function decodeCarrierMetadata(bytes: Buffer): CarrierMetadata {
  const r = new Reader(bytes);
  version(r, 'carrier metadata');
  return { generation: r.int32(), owned: readPartitions(r) };
}

export function encodeCarrierAssignment(carried: readonly CarriedPartition[]): Buffer {
  const w = new Writer(64);
  w.int16(VERSION);
  writePartitions(w, carried);
  return w.finish();
}

/** The partitions a member carries; an empty assignment (a member given nothing) is no partitions. */
export function decodeCarrierAssignment(bytes: Buffer): CarriedPartition[] {
  if (bytes.length === 0) return [];
  const r = new Reader(bytes);
  version(r, 'carrier assignment');
  return readPartitions(r);
}

function version(r: Reader, what: string): void {
  const v = r.int16();
  if (v < 0) throw new ProtocolError(`${what} of version ${v}`);
}

function writePartitions(w: Writer, partitions: readonly CarriedPartition[]): void {
  const byTopic = new Map<string, number[]>();
  for (const p of partitions) {
    let list = byTopic.get(p.topic);
    if (!list) byTopic.set(p.topic, (list = []));
    list.push(p.partition);
  }
  w.arrayLength(byTopic.size);
  for (const [topic, list] of byTopic) {
    w.string(topic);
    w.arrayLength(list.length);
    for (const p of list) w.int32(p);
  }
}

function readPartitions(r: Reader): CarriedPartition[] {
  const out: CarriedPartition[] = [];
  const topics = r.arrayLength();
  for (let t = 0; t < topics; t++) {
    const topic = r.string();
    const count = r.arrayLength();
    for (let i = 0; i < count; i++) out.push({ topic, partition: r.int32() });
  }
  return out;
}
