/**
 * The engine's settings, one typed object per component with its defaults beside it. The
 * settings (src/config/settings.ts) build them once from the proxy's configuration and take their
 * own defaults from here; the main thread hands them to the worker whole (engine-protocol.ts).
 */
import { connectionOptions, type ConnectionOptions, type ConnectionOptionsGiven } from '../../upstream/connection-options.js';
import type { KeyIdentityRules } from './key-identity-rules.js';

/** The cleaner (cleaner/cleaner.ts). */
export interface CleanerOptions {
  /** Pause between cleaner rounds (Kafka's log.cleaner.backoff.ms). */
  backoffMs: number;
}

export const DEFAULT_CLEANER: Readonly<CleanerOptions> = { backoffMs: 15_000 };

/** The carrier's passes (carry/carry-pacing.ts). */
export interface CarryOptions {
  /** What the passes may write (and read) per second, all partitions together; 0: unbounded. */
  bytesPerSecond: number;
}

export const DEFAULT_CARRY: Readonly<CarryOptions> = { bytesPerSecond: 0 };

/** The carrier group in which replicas elect each partition's carrier (election/, docs/carrying.md). */
export interface ElectionOptions {
  groupId: string;
  /** How long the group waits for a replica that stopped heartbeating before others take its partitions. */
  sessionTimeoutMs: number;
}

/** What the settings default to. An engine given no election never carries. */
export const DEFAULT_ELECTION: Readonly<ElectionOptions> = { groupId: 'kcompact-carriers', sessionTimeoutMs: 30_000 };

/** Which partitions are indexed (indexer/partition-demand.ts). */
export interface IndexingOptions {
  /** Only the partitions this replica carries or its clients use (true), or every compacted one. */
  onDemand: boolean;
  /** How long a partition this replica does not carry stays indexed after its clients' last use. */
  idleMs: number;
}

export const DEFAULT_INDEXING: Readonly<IndexingOptions> = { onDemand: true, idleMs: 600_000 };

/** The indexer's fetch tuning; no setting gives it (tests shorten waits). */
export interface IndexerOptions {
  /** Long-poll wait of each fetch (default 500 ms; also how soon a new partition joins a loop). */
  maxWaitMs?: number;
  /**
   * Bytes a fetch waits for, up to maxWaitMs (default 1 MiB). Each partition with news costs a
   * write transaction of its own: with many partitions trickling, a fetch that answered at the
   * first byte would come back at once with a record or two in each, over and over.
   */
  minBytes?: number;
  /** Bytes per fetch answer (default 32 MiB) and per partition (default 8 MiB). */
  maxBytes?: number;
  partitionMaxBytes?: number;
  /** How often metadata is refreshed without a reason to (default 10 s). */
  metadataIntervalMs?: number;
  /** Longest backoff after upstream errors (default 10 s). */
  maxBackoffMs?: number;
}

export const DEFAULT_INDEXER: Readonly<Required<IndexerOptions>> = {
  maxWaitMs: 500,
  minBytes: 1024 * 1024,
  maxBytes: 32 * 1024 * 1024,
  partitionMaxBytes: 8 * 1024 * 1024,
  metadataIntervalMs: 10_000,
  maxBackoffMs: 10_000,
};

/** The indexer's options with a default for each one not given. */
export function indexerOptions(given: IndexerOptions): Required<IndexerOptions> {
  const resolved = { ...DEFAULT_INDEXER };
  for (const key of Object.keys(resolved) as (keyof IndexerOptions)[]) resolved[key] = given[key] ?? resolved[key];
  return resolved;
}

/** How keys compare per topic (key-identity/). */
export interface KeyIdentityOptions {
  /** The keyIdentity setting: exact bytes for every topic it does not name. */
  rules: KeyIdentityRules;
  /** The registry that "registry" decodes keys with (the schemaRegistryUrl setting). */
  schemaRegistryUrl?: string;
}

export const DEFAULT_KEY_IDENTITY: Readonly<KeyIdentityOptions> = { rules: {} };

/** Everything the worker's engine is built from (worker/engine-factory.ts). */
export interface EngineOptions {
  /** The worker builds its own connector (and watches the files) from `connection.security`. */
  connection: ConnectionOptions;
  /** The proxy's data directory; indexes go to <dataDir>/index. */
  dataDir: string;
  cleaner: CleanerOptions;
  carry: CarryOptions;
  /** The carrier group this replica joins; none: it never carries. */
  election?: ElectionOptions;
  indexing: IndexingOptions;
  indexer: IndexerOptions;
  keyIdentity: KeyIdentityOptions;
}

/** What engineOptions needs: the store and the directory, and any part of a component to change. */
export interface EngineOptionsGiven {
  connection: ConnectionOptionsGiven;
  dataDir: string;
  cleaner?: Partial<CleanerOptions>;
  carry?: Partial<CarryOptions>;
  election?: ElectionOptions;
  indexing?: Partial<IndexingOptions>;
  indexer?: IndexerOptions;
  keyIdentity?: Partial<KeyIdentityOptions>;
}

/** The engine's options with the defaults above for what is not given (tests and benchmarks; the proxy gives all). */
export function engineOptions(given: EngineOptionsGiven): EngineOptions {
  return {
    connection: connectionOptions(given.connection),
    dataDir: given.dataDir,
    cleaner: { backoffMs: given.cleaner?.backoffMs ?? DEFAULT_CLEANER.backoffMs },
    carry: { bytesPerSecond: given.carry?.bytesPerSecond ?? DEFAULT_CARRY.bytesPerSecond },
    ...(given.election && { election: given.election }),
    indexing: { onDemand: given.indexing?.onDemand ?? DEFAULT_INDEXING.onDemand, idleMs: given.indexing?.idleMs ?? DEFAULT_INDEXING.idleMs },
    indexer: given.indexer ?? {},
    keyIdentity: {
      rules: given.keyIdentity?.rules ?? DEFAULT_KEY_IDENTITY.rules,
      ...(given.keyIdentity?.schemaRegistryUrl !== undefined && { schemaRegistryUrl: given.keyIdentity.schemaRegistryUrl }),
    },
  };
}
