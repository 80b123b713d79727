import { ProtocolError } from '../errors.js';

/** Kafka's Uuid.ZERO_UUID in its string form. */
export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';

// 16 bytes are 22 base64url characters; the last one carries 2 bits, so only A, Q, g or w
// round-trip. Requiring that keeps each uuid to exactly one string form.
const UUID_PATTERN = /^[A-Za-z0-9_-]{21}[AQgw]$/;

/** Kafka's Uuid.toString(): URL-safe base64 without padding. */
export function uuidToString(buf: Buffer, offset: number): string {
  return buf.toString('base64url', offset, offset + 16);
}

/** Writes the 16 bytes of a uuid string at offset. */
export function writeUuid(uuid: unknown, buf: Buffer, offset: number): void {
  if (typeof uuid !== 'string' || !UUID_PATTERN.test(uuid)) {
    throw new ProtocolError(`invalid uuid ${JSON.stringify(uuid)} (want 22 base64url characters)`);
  }
  buf.write(uuid, offset, 16, 'base64url');
}
