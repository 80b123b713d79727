/**
 * A conditional record's condition as the index keeps it (docs/tables.md, "Compare-and-set"): a
 * number per row, so that rows stay columns of numbers. The index judges it against the key's
 * latest live record before the row, in the log's order, which every replica reads alike.
 *
 * A key's state is its latest record that is neither void, aborted nor a marker: live when that
 * record has a value, none when it is a tombstone or there is none. A tombstone and no record are
 * the same state, so the cleaner's removal of an expired tombstone changes no verdict.
 */
export const Condition = {
  /** No condition: the record is written as any other. */
  None: -1,
  /** Only if the key has no live value (If-None-Match: *). */
  IfNoneMatch: -2,
  /** A condition that cannot hold (malformed, or contradicting itself): the record is void. */
  Never: -3,
} as const;

/** The key's latest live record before a conditional one, or null when it has no live value. */
export function conditionHolds(condition: number, latestLive: number | null): boolean {
  if (condition === Condition.IfNoneMatch) return latestLive === null;
  if (condition >= 0) return latestLive === condition;
  return false;
}

/** A condition as the table API writes it in a record's header (src/engine/api/table-reads.ts), as the index keeps it. */
export function writtenCondition(condition: { ifMatch: number } | { ifNoneMatch: true }): number {
  return 'ifMatch' in condition ? condition.ifMatch : Condition.IfNoneMatch;
}
