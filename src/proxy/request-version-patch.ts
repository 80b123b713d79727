/** Byte offset of the api version in a request frame (after the size prefix and api key). */
const VERSION_OFFSET = 6;

/**
 * Writes `version` into a request frame's header, in place. `piece` is a part of the frame that
 * starts `at` bytes into it, so a header split across network chunks is patched piece by piece.
 */
export function patchRequestVersion(piece: Buffer, at: number, version: number): void {
  for (let i = 0; i < 2; i++) {
    const pos = VERSION_OFFSET + i - at;
    if (pos >= 0 && pos < piece.length) piece[pos] = i === 0 ? version >>> 8 : version & 0xff;
  }
}
