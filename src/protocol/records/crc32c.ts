import { crc32c as nativeCrc32c } from '@node-rs/crc32';

/**
 * CRC-32C (Castagnoli) of buf[start, end), as an unsigned 32-bit number. The range is passed as a
 * subarray view, so nothing is copied.
 */
export function crc32c(buf: Uint8Array, start = 0, end = buf.length): number {
  const view = start === 0 && end === buf.length ? buf : buf.subarray(start, end);
  return nativeCrc32c(view) >>> 0;
}
