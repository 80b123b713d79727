/**
 * Reads `acks` from a Produce request frame without decoding its records: an acks=0 request gets
 * no response from the upstream, so the proxy must not wait for one.
 */
import { decodeRequestHeader } from '../protocol/headers.js';
import { ProtocolError } from '../protocol/errors.js';
import { Reader } from '../protocol/wire/reader.js';

const FLEXIBLE_FROM = 9;

/** `frame` includes the 4-byte size prefix. */
export function produceAcks(frame: Buffer): number {
  const header = decodeRequestHeader(frame.subarray(4));
  if (header.bodyOffset === null) throw new ProtocolError(`Produce v${header.apiVersion} request: version unknown to kcompact`);
  const reader = new Reader(frame, 4 + header.bodyOffset);
  if (header.apiVersion >= FLEXIBLE_FROM) reader.compactNullableString();
  else reader.nullableString();
  return reader.int16();
}
