import { CorruptRecordError } from './errors.js';

/*
 * Records of control batches (attributes bit 5). Key: version int16, type int16. For transaction
 * markers (types 0 and 1) the value is: version int16, coordinatorEpoch int32. Other types
 * (KRaft's leader change, snapshot header/footer, ...) only appear in KRaft's own logs.
 */
export const ControlRecordType = { Abort: 0, Commit: 1 } as const;

export interface ControlRecord {
  keyVersion: number;
  /** ControlRecordType for markers; other values are passed through. */
  type: number;
  /** Present for ABORT and COMMIT markers. */
  marker?: { version: number; coordinatorEpoch: number };
}

/**
 * Decodes a control record's key and value. Like Java, versions newer than 0 are read with the
 * version 0 layout (later versions may only append fields); negative versions are corrupt.
 */
export function decodeControlRecord(key: Buffer | null, value: Buffer | null): ControlRecord {
  if (key === null || key.length < 4) {
    throw new CorruptRecordError(`control record key must hold a version and a type, got ${key?.length ?? 'null'} bytes`);
  }
  const record: ControlRecord = { keyVersion: key.readInt16BE(0), type: key.readInt16BE(2) };
  if (record.keyVersion < 0) throw new CorruptRecordError(`negative control record key version ${record.keyVersion}`);
  if (record.type === ControlRecordType.Abort || record.type === ControlRecordType.Commit) {
    if (value === null || value.length < 6) {
      throw new CorruptRecordError(`transaction marker value must hold a version and a coordinator epoch, got ${value?.length ?? 'null'} bytes`);
    }
    const version = value.readInt16BE(0);
    if (version < 0) throw new CorruptRecordError(`negative transaction marker version ${version}`);
    record.marker = { version, coordinatorEpoch: value.readInt32BE(2) };
  }
  return record;
}
