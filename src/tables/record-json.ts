/**
 * A record as the table API answers it in JSON (docs/tables.md, "Records in JSON"): key, value and
 * header values as UTF-8 text, or base64 when the request asks for it. A record whose bytes are not
 * all UTF-8 comes whole in base64 and says so (`"encoding": "base64"`), so text mode never mangles
 * a value and never fails a change stream part way.
 */
import { isUtf8 } from 'node:buffer';
import type { TableRecord } from '../engine/api/table-reads.js';
import { ApiError } from './api-error.js';

export type Encoding = 'utf8' | 'base64';

export interface RecordJson {
  key: string;
  /** null for a tombstone. */
  value: string | null;
  partition: number;
  offset: number;
  timestamp: number;
  headers: { key: string; value: string | null }[];
  /** Set on a change stream's tombstones. */
  deleted?: true;
  /** Set when the request asked for text but the record is not all UTF-8. */
  encoding?: 'base64';
}

/** Standard or URL-safe alphabet, padded or not: what a client's base64 encoder may give. */
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Bytes from base64 text; a 400 naming `what` when it is not base64 (Buffer.from would skip bad characters silently). */
export function decodeBase64(text: string, what: string): Buffer {
  const t = text.trim();
  const unpadded = t.replace(/=+$/, '');
  if (!BASE64.test(t) || unpadded.length % 4 === 1) {
    throw new ApiError(
      400,
      `the ${what} is not base64`,
      `send the ${what} in base64 (standard or URL-safe alphabet), or drop encoding=base64 to send UTF-8 text`,
    );
  }
  return Buffer.from(t, 'base64');
}

function allUtf8(r: TableRecord): boolean {
  return isUtf8(r.key) && (r.value === null || isUtf8(r.value)) && r.headers.every((h) => h.value === null || isUtf8(h.value));
}

export function recordJson(r: TableRecord, asked: Encoding, opts: { markDeleted?: boolean } = {}): RecordJson {
  const encoding: BufferEncoding = asked === 'utf8' && allUtf8(r) ? 'utf8' : 'base64';
  const text = (b: Buffer | null) => (b === null ? null : b.toString(encoding));
  return {
    key: r.key.toString(encoding),
    value: text(r.value),
    partition: r.partition,
    offset: r.offset,
    timestamp: r.timestamp,
    headers: r.headers.map((h) => ({ key: h.key, value: text(h.value) })),
    ...(opts.markDeleted && r.value === null && { deleted: true as const }),
    ...(asked === 'utf8' && encoding === 'base64' && { encoding: 'base64' as const }),
  };
}
