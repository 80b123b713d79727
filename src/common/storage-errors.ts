/**
 * What a failure of an index file means for what to do next. Two kinds matter:
 *
 * - the file is damaged (SQLite finds it corrupt, or it is not a database): it is a cache of
 *   the upstream log, so it is thrown away and rebuilt;
 * - the storage under it fails (the filesystem is full or read-only, an I/O error, a file that
 *   cannot be opened): the file may be fine, so it is kept, and the work is retried until the
 *   storage is back. Deleting it would turn a full disk into a rebuild of every index.
 *
 * better-sqlite3 gives SQLite's extended result code as the error's `code`
 * (SQLITE_IOERR_WRITE, SQLITE_CORRUPT_INDEX, ...); Node's file system calls give errno names.
 */

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

const DAMAGED = /^SQLITE_(CORRUPT|NOTADB)(_|$)/;
const STORAGE = /^SQLITE_(FULL|IOERR|CANTOPEN|READONLY)(_|$)/;
const STORAGE_ERRNO = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EROFS', 'EACCES', 'EPERM', 'EMFILE', 'ENFILE']);

/** The file's contents are damaged: rebuild it from the upstream. */
export function isDamagedFile(err: unknown): boolean {
  return DAMAGED.test(codeOf(err) ?? '');
}

/** The storage failed, not the file: keep it and try again later. */
export function isStorageFailure(err: unknown): boolean {
  const code = codeOf(err) ?? '';
  return STORAGE.test(code) || STORAGE_ERRNO.has(code);
}

/** Whether the storage failure is the filesystem being full. */
export function isFullDisk(err: unknown): boolean {
  const code = codeOf(err) ?? '';
  return code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT';
}

/** What an operator should do about a storage failure of `file` (in the data directory). */
export function storageFix(err: unknown, file: string): string {
  return isFullDisk(err)
    ? `free space on the filesystem holding ${file} (the data directory's volume) or give it more room; kcompact retries by itself and needs no restart`
    : `check the filesystem holding ${file} (mounted read-write, permissions, disk errors in the kernel log); kcompact retries by itself`;
}
