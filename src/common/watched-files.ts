/**
 * Files that settings name (certificates, keys, a password file), read at start and again when
 * they change, so that rotated credentials reach new connections without a restart. Connections
 * already open keep what they were set up with.
 *
 * Changes are found by reading the files again every few seconds and comparing their bytes,
 * not by inotify or status polling: Kubernetes updates a mounted Secret by swapping a symlink,
 * which a watch on the old file never sees, and a status poll misses a change made before its
 * first look. The files are small; reading them is cheaper than any doubt. SIGHUP makes the main
 * thread re-read every set at once (reloadWatchedFiles).
 */
import fs from 'node:fs';
import type { Logger } from './log.js';

const FILE_CHECK_INTERVAL_MS = 2_000;

export interface WatchedFilesOptions<T> {
  log: Logger;
  /** What the files are, for log lines: "listener TLS certificate and key". */
  what: string;
  /** Called with the new value after a change was read and built. */
  onReload?: (value: T) => void;
  intervalMs?: number;
}

const live = new Set<WatchedFiles<unknown>>();

/** Re-reads every set of watched files of this thread now. */
export function reloadWatchedFiles(): void {
  for (const files of live) files.reload();
}

export class WatchedFiles<T> {
  private current: T;
  private contents: Buffer[];
  /** Contents already found unusable, and the last read failure: each is logged once. */
  private rejected: Buffer[] | null = null;
  private readFailure: string | null = null;
  private readonly timer: NodeJS.Timeout;
  private closed = false;

  /**
   * Reads the files and builds the value from their contents (in the order given); throws what
   * reading or `build` throws. Later, a change that cannot be read or built is logged and the
   * previous value kept: a certificate written before its key is not a reason to stop serving.
   */
  constructor(
    readonly paths: readonly string[],
    private readonly build: (contents: readonly Buffer[]) => T,
    private readonly opts: WatchedFilesOptions<T>,
  ) {
    this.contents = paths.map((p) => fs.readFileSync(p));
    this.current = build(this.contents);
    this.timer = setInterval(() => this.reload(), opts.intervalMs ?? FILE_CHECK_INTERVAL_MS);
    this.timer.unref();
    live.add(this as WatchedFiles<unknown>);
  }

  get value(): T {
    return this.current;
  }

  /** Reads the files again; builds and publishes a new value when their contents changed. */
  reload(): void {
    if (this.closed) return;
    let contents: Buffer[];
    try {
      contents = this.paths.map((p) => fs.readFileSync(p));
      this.readFailure = null;
    } catch (err) {
      if (this.readFailure !== (err as Error).message) {
        this.readFailure = (err as Error).message;
        this.opts.log.warn(`cannot re-read the ${this.opts.what}; keeping the previous ones`, {
          files: this.paths,
          err,
          fix: 'restore the files; they are checked again every few seconds and on SIGHUP',
        });
      }
      return;
    }
    const same = (other: readonly Buffer[] | null) => other !== null && contents.every((c, i) => c.equals(other[i]!));
    if (same(this.contents) || same(this.rejected)) return;
    let next: T;
    try {
      next = this.build(contents);
    } catch (err) {
      this.rejected = contents;
      this.opts.log.warn(`the ${this.opts.what} changed but cannot be used; keeping the previous ones`, {
        files: this.paths,
        err,
        fix: 'write files that belong together (a certificate and its key); they are checked again every few seconds and on SIGHUP',
      });
      return;
    }
    this.contents = contents;
    this.rejected = null;
    this.current = next;
    this.opts.log.info(`reloaded the ${this.opts.what}; new connections use what they hold now`, { files: this.paths });
    this.opts.onReload?.(next);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    live.delete(this as WatchedFiles<unknown>);
  }
}
