/**
 * The compaction engine built from its options: the store registry, the indexer, the cleaner
 * and, where this replica joins a carrier group, the election and the carrier. It answers the
 * main thread's messages (engine-protocol.ts) through `handle` and sends through `deps.send`,
 * so that the worker thread (engine-worker.ts) only wires its port to it and a test can run it
 * in-process.
 */
import { SYSTEM_CLOCK, type Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import type { TopicPolicy } from '../api/topic-policy.js';
import type { EngineReply, EngineRequest, FromWorker, RebuildingPartition, ToWorker, WorkerConfig } from '../api/engine-protocol.js';
import { serializeError } from '../api/worker-log.js';
import { DEFAULT_INDEXER } from '../api/engine-options.js';
import { Carrier } from '../carry/carrier.js';
import { CarryPacing } from '../carry/carry-pacing.js';
import { shareGroupStarts } from '../carry/share-group-starts.js';
import { CarrierGroup } from '../election/carrier-group.js';
import { Cleaner } from '../cleaner/cleaner.js';
import { Indexer } from '../indexer/indexer.js';
import { PartitionDemand } from '../indexer/partition-demand.js';
import { StoreRegistry } from '../store/store-registry.js';
import { KeyIdentities } from '../key-identity/key-identities.js';
import { engineStatus, inspectTopic } from './engine-status.js';
import { UpstreamConnector } from '../../upstream/upstream-connector.js';
import { connectCluster } from '../../upstream/connection-options.js';
import { TableService } from '../table-reads/table-service.js';
import { fetchRecords } from '../indexer/partition-requests.js';

export interface EngineDeps {
  log: Logger;
  /** To the main thread; snapshots come with their buffers to transfer. */
  send(message: FromWorker, transfer?: ArrayBuffer[]): void;
  /** The time (epoch ms) and the waits of the cleaner, the carrier and partition demand; the system clock when omitted. */
  clock?: Clock;
}

export interface Engine {
  /** A message from the main thread; requests are answered with a 'reply' through deps.send. */
  handle(message: ToWorker): void;
  /** Stops indexing, cleaning and carrying, and closes every index; the same promise each call. */
  close(): Promise<void>;
}

/** How long an on-demand clean waits for the index to reach what the upstream holds. */
const CATCH_UP_DEADLINE_MS = 10_000;
/** How long an on-demand clean waits for the carrier group to divide partitions the catch-up found. */
const GROUP_SETTLE_DEADLINE_MS = 10_000;

/**
 * Builds the engine and starts it: the indexes already on disk are opened and their survivors
 * sent before this resolves, so the main thread's view filters from its first fetch.
 */
export async function createEngine(config: WorkerConfig, deps: EngineDeps): Promise<Engine> {
  const { log, send } = deps;
  const clock = deps.clock ?? SYSTEM_CLOCK;
  const now = (): number => clock.now();
  // Told each time a partition's index moves (the registry's end sink): made once the indexer is.
  let tables: TableService | undefined;
  const registry = new StoreRegistry(
    config.dataDir,
    log,
    (id, snapshot, transfer) => send({ type: 'snapshot', topic: id.topic, partition: id.partition, snapshot }, transfer),
    (id, end) => {
      send({ type: 'end', topic: id.topic, partition: id.partition, end });
      tables?.indexMoved(id.topic, id.partition);
    },
  );
  const connector = new UpstreamConnector(config.connection.security, log);
  // The engine's own client of the upstream: a thread cannot share the main thread's sockets.
  const cluster = connectCluster(config.connection, { clientId: 'kcompact-indexer', connector, log });
  // Kafka may answer a fetch a batch past max_bytes: the answers must fit a frame with room to spare.
  const fetchBytes = Math.min(DEFAULT_INDEXER.maxBytes, Math.floor(config.connection.maxFrameBytes / 2));
  // The registry's client library is large: only a replica whose keys are framed by a registry loads it.
  const registryUrl = config.keyIdentity.schemaRegistryUrl;
  const schemas = registryUrl
    ? new (await import('../key-identity/registry-schemas.js')).RegistrySchemas(registryUrl, config.connection.requestTimeoutMs, log)
    : undefined;
  const identities = new KeyIdentities(config.keyIdentity.rules, schemas, log);
  const indexer = new Indexer(
    cluster,
    registry,
    log,
    { maxBytes: fetchBytes, partitionMaxBytes: Math.min(DEFAULT_INDEXER.partitionMaxBytes, fetchBytes), ...config.indexer },
    identities,
  );
  let policies: ReadonlyMap<string, TopicPolicy> = new Map();
  const election = config.election;
  // The replicas in front of the store elect one carrier per compacted partition.
  const group = election
    ? new CarrierGroup({
        ...election,
        upstream: cluster,
        // A member told to join again stops carrying at once: it needs no more time than a session.
        rebalanceTimeoutMs: election.sessionTimeoutMs,
        partitions: () => indexer.partitions(),
        onAssigned: (generation, carried) => {
          log.info('carrier group assignment', { groupId: election.groupId, generation, carried: carried.length });
          for (const p of carried) indexer.want(p.topic, p.partition);
          // Partitions taken over are carried at the next round, not a whole backoff later.
          cleaner.wakeUp();
        },
        onRevoked: () => log.debug('carrier group assignment revoked', { groupId: election.groupId }),
        log,
      })
    : undefined;
  // One budget for every partition this replica carries: its passes take turns at one rate.
  const pacing = new CarryPacing(config.carry);
  const carrier = group
    ? new Carrier({
        registry,
        leader: (topic, partition) => indexer.leader(topic, partition),
        wrote: (topic, partition, end) => indexer.readUpTo(topic, partition, end),
        log,
        clock,
        mandate: group,
        shareGroupStarts: (topic, partition) => shareGroupStarts(cluster, topic, partition),
        pacing,
      })
    : undefined;
  const cleaner = new Cleaner({
    ...config.cleaner,
    registry,
    policies: () => policies,
    // Where a carrier is elected, it alone moves the store's log start; the others drop from their index.
    deleteRecords: (topic, partition, offset) =>
      group && !group.holds(topic, partition) ? Promise.resolve(false) : indexer.deleteRecords(topic, partition, offset),
    log,
    clock: now,
    ...(carrier && { carrier }),
  });
  indexer.onPartitionsChanged(() => group?.partitionsChanged());
  // A replica indexes the partitions it carries and the ones its clients use (partition-demand.ts).
  const demand = new PartitionDemand(config.indexing.idleMs, now);
  if (config.indexing.onDemand) indexer.setWanted((topic, partition) => demand.wanted(topic, partition) || (group?.holds(topic, partition) ?? false));

  tables = new TableService({
    registry,
    policies: () => policies,
    partitions: () => indexer.partitions(),
    use: (topic, partition) => {
      demand.ask(topic, partition);
      indexer.eager(topic, partition);
      indexer.want(topic, partition);
    },
    caughtUp: (topic, partition, deadlineMs) => indexer.caughtUp(topic, partition, deadlineMs),
    foreseen: (write, at, verdict) => send({ type: 'foreseen', write, at, verdict }),
    identities,
    read: (topic, partition) => async (offset, maxBytes) => {
      const store = registry.get(topic, partition);
      return fetchRecords(await indexer.leader(topic, partition), { topic, topicId: store?.checkpoint.topicId ?? '', partition }, offset, maxBytes);
    },
    clock,
    log,
  });

  const parts = { indexer, cleaner, demand, ...(group && { group }), policies: () => policies, carryBytesPerSecond: config.carry.bytesPerSecond };

  /** Asks for every partition of the topic (of every compacted topic when omitted): an operator's clean covers them. */
  const askFor = (topic: string | undefined): void => {
    for (const p of indexer.partitions()) {
      if (topic !== undefined && p.topic !== topic) continue;
      demand.ask(p.topic, p.partition);
      indexer.want(p.topic, p.partition);
    }
  };

  /** Answers a request with what the contract pairs with it (EngineReplies), or the error it failed with. */
  const reply = async <R extends EngineRequest>(request: R, work: () => EngineReply<R> | Promise<EngineReply<R>>): Promise<void> => {
    const id = request.id;
    try {
      send({ type: 'reply', id, ok: true, value: await work() });
    } catch (err) {
      send({ type: 'reply', id, ok: false, error: serializeError(err) });
    }
  };

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      // First, so that the others take this replica's partitions at once.
      await group?.stop();
      // A pass waiting for its budget stops there (it no longer carries), rather than holding up the close.
      pacing.close();
      const indexerDone = indexer.close();
      cluster.close();
      schemas?.close();
      connector.close();
      await indexerDone;
      await cleaner.close();
      registry.closeAll();
    })());

  /**
   * Drops the indexes and lets the indexer read the topics again from the upstream. The dropped
   * partitions' survivor snapshots are withdrawn first (the fetch view then hides nothing) and the
   * new indexes start uncleaned, so nothing is hidden that should be seen while they fill.
   */
  const rebuild = (topic: string | undefined): RebuildingPartition[] => {
    if (topic !== undefined && !policies.has(topic)) throw new Error(`topic ${topic} is not compacted; only compacted topics have an index`);
    const topics = topic === undefined ? [...policies.keys()] : [topic];
    const dropped: RebuildingPartition[] = [];
    for (const store of registry.all()) {
      if (topics.includes(store.id.topic)) dropped.push({ topic: store.id.topic, partition: store.id.partition, indexedUpTo: store.checkpoint.nextOffset });
    }
    for (const t of topics) {
      indexer.rebuild(t);
      cleaner.indexRebuilt(t);
    }
    log.info('rebuilding partition indexes from the upstream', { topics, partitions: dropped.length });
    return dropped;
  };

  const handle = (message: ToWorker): void => {
    switch (message.type) {
      case 'policies':
        policies = new Map(message.policies);
        indexer.setPolicies(new Map(policies));
        break;
      case 'demand':
        for (const [topic, partition] of message.partitions) {
          demand.ask(topic, partition);
          indexer.want(topic, partition);
        }
        break;
      case 'compact':
        void reply(message, async () => {
          askFor(message.topic);
          await indexer.catchUp(message.topic, CATCH_UP_DEADLINE_MS);
          // Partitions the metadata round of the catch-up found for the first time.
          askFor(message.topic);
          await indexer.catchUp(message.topic, CATCH_UP_DEADLINE_MS);
          // Partitions the catch-up found are divided anew first: the clean's pass is the new carrier's.
          await group?.settled(GROUP_SETTLE_DEADLINE_MS);
          return cleaner.compactNow(message.topic);
        });
        break;
      case 'status':
        void reply(message, () => engineStatus(registry, parts));
        break;
      case 'inspect':
        void reply(message, () => inspectTopic(registry, parts, message.topic));
        break;
      case 'offsetForTime':
        void reply(message, () => {
          const store = registry.get(message.topic, message.partition);
          return store ? store.offsetForTime(message.timestamp) : null;
        });
        break;
      case 'caughtUp':
        void reply(message, () => indexer.caughtUp(message.topic, message.partition, message.timeoutMs));
        break;
      case 'rebuild':
        void reply(message, () => rebuild(message.topic));
        break;
      case 'tableLatest':
        void reply(message, () => tables.latest(message.topic, message.partition, message.key, message.atLeast, message.timeoutMs));
        break;
      case 'tableVerdict':
        void reply(message, () => tables.verdict(message.topic, message.partition, message.offset, message.timeoutMs, message.written));
        break;
      case 'tableExpect':
        void tables.foresee(message.write, message.topic, message.partition, message.written);
        break;
      case 'tableForget':
        tables.forget(message.write);
        break;
      case 'tableChanges':
        void reply(message, () => tables.changes(message.topic, message.partition, message.from, message.key, message.limit, message.waitMs));
        break;
      case 'close':
        void reply(message, close);
        break;
    }
  };

  registry.openExisting();
  // What a restart finds on disk is kept for the idle time, as if its clients had just used it.
  for (const store of registry.all()) demand.ask(store.id.topic, store.id.partition);
  indexer.start();
  cleaner.start();
  group?.start();
  return { handle, close };
}
