/** A tagged field kept as raw bytes (one the schema does not know, or a header's). */
export interface TaggedField {
  tag: number;
  data: Buffer;
}
