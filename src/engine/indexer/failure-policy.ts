/**
 * What the indexer does when something fails, and how long it waits before trying again: the
 * metadata loop and a broker's fetch loop back off by the one backoff rule (upstream/backoff.ts);
 * a partition the leader answers with an error pauses briefly (shortly when a metadata refresh
 * should find its new leader); a partition whose key schemas or index storage are unavailable
 * waits with a growing backoff, said once. Everything is timed by the indexer's clock.
 */
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import { isDamagedFile, isStorageFailure, storageFix } from '../../common/storage-errors.js';
import { errorName } from '../../protocol/errors.js';
import { backoffMs } from '../../upstream/backoff.js';
import { isStaleMetadataCode } from '../../upstream/error-class.js';
import type { SchemaUnavailableError } from '../key-identity/schema-unavailable.js';
import type { PartitionStore } from '../store/partition-store.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { message, type Tail } from './tails.js';

/** The backoff rule's first waits (upstream.backoff.ts) for each kind of failure; maxBackoffMs caps them all. */
const METADATA_BACKOFF_BASE_MS = 400;
const FETCH_BACKOFF_BASE_MS = 200;
const SCHEMA_BACKOFF_BASE_MS = 400;
const STORAGE_BACKOFF_BASE_MS = 500;
/** A partition's pause after an error answer: short when a metadata refresh should find its new leader. */
const STALE_LEADER_RETRY_MS = 200;
const PARTITION_ERROR_RETRY_MS = 1000;
/** A partition's pause after its index failed otherwise, or a fetch out of range found the offset inside the log after all. */
const RETRY_MS = 1000;

export interface FailurePolicyDeps {
  registry: StoreRegistry;
  log: Logger;
  clock: Clock;
  /** Caps every backoff. */
  maxBackoffMs: number;
}

export class FailurePolicy {
  private closing = new AbortController();

  constructor(private readonly deps: FailurePolicyDeps) {}

  /** How long the metadata loop waits after its `failures`-th failure in a row. */
  metadataBackoff(failures: number): number {
    return backoffMs(failures, { baseMs: METADATA_BACKOFF_BASE_MS, maxMs: this.deps.maxBackoffMs });
  }

  /** How long a broker's fetch loop waits after its `failures`-th failure in a row. */
  fetchBackoff(failures: number): number {
    return backoffMs(failures, { baseMs: FETCH_BACKOFF_BASE_MS, maxMs: this.deps.maxBackoffMs });
  }

  /** A backoff pause: only close() cuts it short, not the wake-ups a failure itself asks for. */
  pause(ms: number): Promise<void> {
    return this.deps.clock.sleep(ms, this.closing.signal);
  }

  /** Pauses from now on take their whole time (the indexer starts). */
  open(): void {
    if (this.closing.signal.aborted) this.closing = new AbortController();
  }

  /** Ends every pause at once, and the ones asked for from now on (the indexer stops). */
  close(): void {
    this.closing.abort();
  }

  /**
   * The leader answered the partition with an error: it pauses, and says why. True when the
   * error says the leader moved: the caller forgets it and asks Metadata again.
   */
  partitionError(tail: Tail, errorCode: number): boolean {
    tail.lastError = `fetch error ${errorName(errorCode)}`;
    const stale = isStaleMetadataCode(errorCode);
    // A short pause either way: metadata that still names the same leader must not make the
    // partition bounce between the two in a tight loop.
    tail.retryAt = this.deps.clock.now() + (stale ? STALE_LEADER_RETRY_MS : PARTITION_ERROR_RETRY_MS);
    return stale;
  }

  /** The partition is not to be fetched for a while (a fetch out of range that found nothing to do). */
  retryLater(tail: Tail): void {
    tail.retryAt = this.deps.clock.now() + RETRY_MS;
  }

  /**
   * The registry did not give a key schema: nothing is guessed. The partition's indexing waits
   * and retries with a growing backoff; its records past the index stay visible, unfiltered.
   */
  schemaUnavailable(tail: Tail, err: SchemaUnavailableError): void {
    tail.schemaFailures++;
    const wait = backoffMs(tail.schemaFailures, { baseMs: SCHEMA_BACKOFF_BASE_MS, maxMs: this.deps.maxBackoffMs });
    tail.retryAt = this.deps.clock.now() + wait;
    if (tail.lastError !== err.message) {
      this.deps.log.warn('key schema not available from the schema registry; indexing of the partition waits for it (its records stay visible, unfiltered)', {
        topic: tail.topic,
        partition: tail.partition,
        schemaId: err.schemaId,
        registry: err.registry,
        reason: err.reason,
        attempt: tail.schemaFailures,
        retryInMs: wait,
        fix: 'check that the registry is reachable and holds the schema id the keys carry',
      });
    }
    tail.lastError = err.message;
  }

  /**
   * Opening or writing the index failed. A damaged file starts over. A failed storage (a full
   * disk) leaves the file as committed (PartitionStore.write) and the partition waits with a
   * growing backoff, said once with what to do; its records past the index stay visible,
   * unfiltered. Anything else reopens the file, so that its state follows what was committed.
   */
  storeFailed(tail: Tail, err: unknown, store?: PartitionStore): void {
    const { registry, log, clock } = this.deps;
    const repeated = tail.lastError === message(err);
    tail.lastError = message(err);
    tail.retryAt = clock.now() + RETRY_MS;
    if (isDamagedFile(err)) {
      if (store) registry.rebuildFile(store, `${(err as { code: string }).code}: ${message(err)}`);
      return;
    }
    if (isStorageFailure(err)) {
      tail.storageFailures++;
      const wait = backoffMs(tail.storageFailures, { baseMs: STORAGE_BACKOFF_BASE_MS, maxMs: this.deps.maxBackoffMs });
      tail.retryAt = clock.now() + wait;
      if (tail.storageFailures === 1) {
        const file = store?.file ?? registry.fileOf(tail.topic);
        log.error(
          'the storage of a partition index failed; indexing of the partition waits for it (its records past the index are served unfiltered, like the uncleaned head of a log)',
          {
            topic: tail.topic,
            partition: tail.partition,
            err,
            retryInMs: wait,
            fix: storageFix(err, file),
          },
        );
      }
      return;
    }
    // A batch the upstream keeps sending fails the same way each second: say so once.
    if (!repeated) log.error('indexing a partition failed; retrying', { topic: tail.topic, partition: tail.partition, err });
    if (store) registry.reopen(store);
  }

  /** The partition was indexed: whatever it waited for is back, said once. */
  indexed(tail: Tail): void {
    tail.lastError = undefined;
    if (tail.schemaFailures > 0) {
      this.deps.log.info('key schemas available again; indexing resumed', { topic: tail.topic, partition: tail.partition, after: tail.schemaFailures });
      tail.schemaFailures = 0;
    }
    if (tail.storageFailures > 0) {
      this.deps.log.info('the index file is writable again; indexing resumed', { topic: tail.topic, partition: tail.partition, after: tail.storageFailures });
      tail.storageFailures = 0;
    }
  }
}
