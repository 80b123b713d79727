/**
 * A full garbage collection when a thread has gone quiet after work that left Buffers behind.
 *
 * The megabytes of Fetch answers the proxy reads, relays and rewrites live in Buffers outside
 * the JS heap. V8 collects them as JS allocation fills its heap, or once they have grown some
 * 64 MiB past what its last full collection left; a thread that goes idle after a burst
 * allocates next to nothing, so the burst's dead Buffers stay until traffic resumes, as after
 * the scale benchmark's reads (bench/scale.ts; what they held is in docs/performance.md).
 *
 * Like the JVM's periodic collection of an idle heap (G1, JEP 346), a timer looks at the thread
 * every QUIET_MS and collects when its event loop was busy at most IDLE_BUSY_SHARE of the time
 * through the last QUIET_LOOKS looks and its Buffers have grown GROWTH_BYTES past the floor: what
 * the last collection left, or the fewest seen since. A busy thread is left to V8. A collection
 * stops the thread while it runs and its helper threads take CPU from the rest of the process, so
 * only a thread quiet for a while is collected, not one between two requests of a burst.
 * QUIET_MS is longer than reused-buffers.ts's 5 s after which buffers kept for reuse are let go,
 * so that a burst's kept buffers are garbage by the time the thread is collected.
 *
 * Collections need gc(), there when node runs with --expose-gc (node-flags.ts); without it
 * this does nothing.
 */
import type { Logger } from './log.js';

export interface IdleCollectionProbes {
  /** The thread's gc(), undefined when node was started without --expose-gc. */
  gc: (() => void) | undefined;
  /** Bytes of this thread's ArrayBuffers and Buffers, live or not yet collected. */
  bufferBytes: () => number;
  /** Share of the time since the previous call that the event loop was busy, 0..1. */
  busyShare: () => number;
}

export const QUIET_MS = 6_000;
export const QUIET_LOOKS = 2;
/**
 * Well above the share of time a proxy with no clients keeps its main thread busy (the topic
 * config store polls twice a second; docs/performance.md), and well below that of a thread
 * relaying a burst.
 */
export const IDLE_BUSY_SHARE = 0.05;
export const GROWTH_BYTES = 16 << 20;
/** V8 frees dead Buffers' memory on a background thread, within milliseconds of a collection. */
const FREED_MS = 1_000;

/** The probes of the calling thread (main or worker). */
export function threadProbes(): IdleCollectionProbes {
  let last = performance.eventLoopUtilization();
  return {
    gc: globalThis.gc as (() => void) | undefined,
    bufferBytes: () => process.memoryUsage().arrayBuffers,
    busyShare: () => {
      const now = performance.eventLoopUtilization();
      const share = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      return share;
    },
  };
}

/** The looks at one thread: look() collects when due and says whether it did. */
export class IdleCollector {
  private floor = 0;
  private quietLooks = 0;

  constructor(
    private readonly probes: IdleCollectionProbes,
    private readonly log: Logger,
  ) {
    probes.busyShare();
  }

  look(): boolean {
    const busy = this.probes.busyShare();
    const bytes = this.probes.bufferBytes();
    this.floor = Math.min(this.floor, bytes);
    this.quietLooks = busy > IDLE_BUSY_SHARE ? 0 : this.quietLooks + 1;
    if (!this.probes.gc || this.quietLooks < QUIET_LOOKS || bytes - this.floor < GROWTH_BYTES) return false;
    const started = performance.now();
    this.probes.gc();
    const ms = performance.now() - started;
    setTimeout(() => {
      this.floor = this.probes.bufferBytes();
      this.log.debug('idle: collected garbage', {
        buffersBefore: bytes,
        buffersAfter: this.floor,
        busyShare: Number(busy.toFixed(3)),
        ms: Number(ms.toFixed(1)),
      });
    }, FREED_MS).unref();
    return true;
  }
}

/** Looks every QUIET_MS until stopped; the timer does not keep the thread alive. */
export function collectWhenIdle(log: Logger, probes: IdleCollectionProbes = threadProbes()): { stop(): void } {
  if (!probes.gc) {
    log.debug('idle collection off: node runs without --expose-gc');
    return { stop: () => {} };
  }
  const collector = new IdleCollector(probes, log);
  const timer = setInterval(() => collector.look(), QUIET_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
