/**
 * Reads a record's condition from its headers (docs/tables.md, "Compare-and-set"): the table API
 * writes them, and so may any Kafka producer. A record with neither header has no condition; one
 * whose condition is malformed, repeated or self-contradicting gets one that never holds, so that
 * every replica voids it alike rather than each guessing.
 */
import { eachHeader } from '../../protocol/records/record-decode.js';
import { IF_MATCH_HEADER, IF_NONE_MATCH_HEADER } from '../../protocol/carry/condition-headers.js';
import { Condition } from '../store/condition.js';

const IF_MATCH = Buffer.from(IF_MATCH_HEADER, 'latin1');
const IF_NONE_MATCH = Buffer.from(IF_NONE_MATCH_HEADER, 'latin1');
const STAR = 0x2a;
const DIGIT_0 = 0x30;
/** Offsets are exact below 2^53: 16 digits always are, and no log gets near 17. */
const MAX_DIGITS = 16;

function sameBytes(buf: Buffer, start: number, end: number, want: Buffer): boolean {
  if (end - start !== want.length) return false;
  for (let i = 0; i < want.length; i++) if (buf[start + i] !== want[i]) return false;
  return true;
}

/** A decimal offset in [start, end), or -1 when it is not one. */
function decimalAt(buf: Buffer, start: number, end: number): number {
  const n = end - start;
  if (n < 1 || n > MAX_DIGITS || (n > 1 && buf[start] === DIGIT_0)) return -1;
  let value = 0;
  for (let i = start; i < end; i++) {
    const d = buf[i]! - DIGIT_0;
    if (d < 0 || d > 9) return -1;
    value = value * 10 + d;
  }
  return value;
}

/** The condition of a record whose headers a scan found (RecordKey.headerCount > 0). */
export function conditionOf(payload: Buffer, headersStart: number, headerCount: number): number {
  let condition: number = Condition.None;
  let seen = 0;
  eachHeader(payload, headersStart, headerCount, (keyStart, keyEnd, valueStart, valueEnd) => {
    if (keyEnd - keyStart < IF_MATCH.length || payload[keyStart] !== IF_MATCH[0]) return;
    if (sameBytes(payload, keyStart, keyEnd, IF_MATCH)) {
      seen++;
      const offset = valueEnd < 0 ? -1 : decimalAt(payload, valueStart, valueEnd);
      condition = offset >= 0 ? offset : Condition.Never;
    } else if (sameBytes(payload, keyStart, keyEnd, IF_NONE_MATCH)) {
      seen++;
      condition = valueEnd === valueStart + 1 && payload[valueStart] === STAR ? Condition.IfNoneMatch : Condition.Never;
    }
  });
  return seen > 1 ? Condition.Never : condition;
}
