/**
 * Confluent's wire format for a serialized key: magic byte 0, the writer schema's id as a
 * big-endian int32, then the serialized data (for Protobuf, message indexes come first). A key
 * that does not start this way is not framed and keeps its exact bytes as its identity.
 */
export const FRAME_HEADER_BYTES = 5;
const MAGIC_BYTE = 0;

export function isFramed(key: Uint8Array): boolean {
  return key.length >= FRAME_HEADER_BYTES && key[0] === MAGIC_BYTE;
}

/** The schema id of a framed key. */
export function frameSchemaId(key: Uint8Array): number {
  return (key[1]! << 24) | (key[2]! << 16) | (key[3]! << 8) | key[4]!;
}
