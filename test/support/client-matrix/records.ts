/**
 * Records as the matrix compares them: UTF-8 text, null for null, in (partition, offset) order.
 */
import { genRecord, type RecordView } from '../summary.js';
import type { Generated, KeyValue } from './types.js';

function text(b: Buffer | null): string | null {
  return b === null ? null : b.toString('utf8');
}

/** The bed's generated records (the same bytes every client's generator makes). */
export function generatedRecords(g: Omit<Generated, 'tombstoneEvery'> & { tombstoneEvery?: number }): KeyValue[] {
  return Array.from({ length: g.count }, (_, n) => {
    const { key, value } = genRecord(g.start + n, g.keys, g.valueSize, g.tombstoneEvery ?? 0);
    return { key: text(key), value: text(value) };
  });
}

/** Just what identifies a record, in (partition, offset) order: clients add fields of their own. */
export function comparableRecords(records: readonly RecordView[]): RecordView[] {
  return records
    .map(({ partition, offset, key, value }) => ({ partition, offset, key, value }))
    .sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}

/** A cleanup.policy=compact topic: every topic of the matrix is one, created through kcompact. */
export const COMPACT: Readonly<Record<string, string>> = { 'cleanup.policy': 'compact' };
