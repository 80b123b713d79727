/**
 * The main thread's handle on compaction: starts the worker thread that indexes and cleans,
 * feeds it the compacted topics' policies, and serves the fetch view from the survivor snapshots
 * it publishes (in memory, no SQLite on the event loop).
 *
 * The promise resolves once the worker has opened the indexes already on disk and published
 * their survivors, so a restarted proxy filters fetches from its first request. If the worker
 * dies (a bug, not an upstream outage: those it rides out itself), it is started again after a
 * second with the last policies; the view keeps serving the last snapshots meanwhile.
 */
import type { CompactionEngine } from '../../engine/api/engine-handle.js';
import { Worker } from 'node:worker_threads';
import type { HostPort } from '../../common/host-port.js';
import type { Logger, LogLevel } from '../../common/log.js';

import type { TopicPolicy } from '../../engine/api/topic-policy.js';
import type { IndexerOptions } from '../../engine/api/engine-options.js';
import type { KeyIdentityRules } from '../../engine/api/key-identity-rules.js';
import { SurvivorIndex } from './survivor-index.js';
import type { UpstreamSecurity } from '../../upstream/upstream-connector.js';
import { DemandNotes } from './demand-notes.js';
import type { CarrierGroupSettings, EngineReplies, EngineRequest, FromWorker, ToWorker, WorkerConfig } from '../../engine/api/engine-protocol.js';
import { deserializeError, restoreFields } from '../../engine/api/worker-log.js';

export interface CompactionEngineOptions {
  upstream: HostPort[];
  /** The proxy's data directory; indexes go to <dataDir>/index. */
  dataDir: string;
  log: Logger;
  /** Pause between cleaner rounds (log.cleaner.backoff.ms); default 15000. */
  cleanerBackoffMs?: number;
  /** The carrier group this replica joins (docs/carrying.md); without one, it never carries. */
  carrierGroup?: CarrierGroupSettings;
  /** What this replica's carry passes may write (and read) per second, all partitions together; 0 or unset: unbounded. */
  carryBytesPerSecond?: number;
  /** Whether only the partitions this replica carries or its clients use are indexed (default true); false indexes every one. */
  indexOnDemand?: boolean;
  /** How long a partition this replica does not carry stays indexed after its clients' last use (default 10 minutes). */
  indexIdleMs?: number;
  maxFrameBytes: number;
  requestTimeoutMs: number;
  clientId?: string;
  /** Fetch tuning of the indexer (tests shorten waits). */
  indexer?: IndexerOptions;
  /** Key identity per topic (default: exact bytes everywhere) and the registry "registry" needs. */
  keyIdentity?: KeyIdentityRules;
  schemaRegistryUrl?: string;
  /** TLS and SASL of the worker's upstream connections (plain TCP when omitted). */
  upstreamSecurity?: UpstreamSecurity;
}

const RESTART_DELAY_MS = 1000;
export const DEFAULT_INDEX_IDLE_MS = 600_000;
const CLOSE_TIMEOUT_MS = 30_000;
/**
 * The worker's young generation: V8 lets it grow to 32 MiB, which the worker keeps reserved
 * once its ingest has grown it, though what survives a scavenge there is a few batches' worth.
 */
const WORKER_YOUNG_GENERATION_MB = 16;

function levelOf(log: Logger): LogLevel {
  const levels: LogLevel[] = ['debug', 'info', 'warn', 'error'];
  return levels.find((l) => log.enabled(l)) ?? 'error';
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

export async function startCompactionEngine(opts: CompactionEngineOptions): Promise<CompactionEngine> {
  // The worker answers after posting what its index published on the way: the snapshot is applied first.
  const indexIdleMs = opts.indexIdleMs ?? DEFAULT_INDEX_IDLE_MS;
  // Told again well within the idle time, so that a partition in use is never let go.
  const demand = new DemandNotes((partitions) => post({ type: 'demand', partitions }), Math.max(1_000, Math.floor(indexIdleMs / 4)));
  const index = new SurvivorIndex(
    (topic, partition, timeoutMs) => call('caughtUp', { topic, partition, timeoutMs }),
    (topic, partition) => demand.note(topic, partition),
  );
  const config: WorkerConfig = {
    upstream: opts.upstream,
    dataDir: opts.dataDir,
    cleanerBackoffMs: opts.cleanerBackoffMs ?? 15_000,
    ...(opts.carrierGroup && { carrierGroup: opts.carrierGroup }),
    carryBytesPerSecond: opts.carryBytesPerSecond ?? 0,
    indexIdleMs,
    indexOnDemand: opts.indexOnDemand ?? true,
    maxFrameBytes: opts.maxFrameBytes,
    requestTimeoutMs: opts.requestTimeoutMs,
    clientId: opts.clientId ?? 'kcompact-indexer',
    logLevel: levelOf(opts.log),
    indexer: opts.indexer ?? {},
    keyIdentity: opts.keyIdentity ?? {},
    upstreamSecurity: opts.upstreamSecurity ?? {},
    ...(opts.schemaRegistryUrl ? { schemaRegistryUrl: opts.schemaRegistryUrl } : {}),
  };
  const pending = new Map<number, Pending>();
  let nextId = 1;
  let policies: [string, TopicPolicy][] | undefined;
  let closing = false;
  let worker: Worker;
  /** The worker exited and is not started again yet: it would never answer a close. */
  let workerGone = false;
  let ready: Promise<void>;

  const onMessage = (m: FromWorker, markReady: () => void) => {
    switch (m.type) {
      case 'ready':
        markReady();
        break;
      case 'snapshot':
        index.apply(m.topic, m.partition, m.snapshot);
        break;
      case 'end':
        index.applyEnd(m.topic, m.partition, m.end);
        break;
      case 'log':
        opts.log[m.level](m.msg, m.fields ? restoreFields(m.fields) : undefined);
        break;
      case 'reply': {
        const call = pending.get(m.id);
        pending.delete(m.id);
        if (m.ok) call?.resolve(m.value);
        else call?.reject(deserializeError(m.error));
        break;
      }
    }
  };

  const spawn = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const w = new Worker(new URL('../../engine/worker/engine-worker.js', import.meta.url), {
        workerData: config,
        resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      });
      worker = w;
      workerGone = false;
      let isReady = false;
      w.on('message', (m: FromWorker) =>
        onMessage(m, () => {
          isReady = true;
          resolve();
        }),
      );
      w.on('error', (err) => opts.log.error('compaction worker failed', { err }));
      w.on('exit', (code) => {
        workerGone = true;
        for (const call of pending.values()) call.reject(new Error(`compaction worker exited (code ${code})`));
        pending.clear();
        if (!isReady) reject(new Error(`compaction worker exited (code ${code}) before it was ready`));
        if (closing) return;
        opts.log.error('compaction worker exited; restarting it', { code, restartInMs: RESTART_DELAY_MS });
        setTimeout(() => {
          if (closing) return;
          demand.forget();
          ready = spawn();
          ready.catch((err) => opts.log.error('compaction worker did not restart', { err }));
          if (policies) post({ type: 'policies', policies });
        }, RESTART_DELAY_MS).unref();
      });
    });

  const post = (m: ToWorker) => worker.postMessage(m);

  /** A request of the contract (engine-protocol.ts), answered by the reply EngineReplies pairs with it. */
  const call = <T extends EngineRequest['type']>(type: T, fields: Omit<Extract<EngineRequest, { type: T }>, 'type' | 'id'>): Promise<EngineReplies[T]> =>
    new Promise<EngineReplies[T]>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      post({ ...fields, type, id } as EngineRequest);
    });

  ready = spawn();
  await ready;

  return {
    index,
    setPolicies(next) {
      policies = [...next];
      post({ type: 'policies', policies });
    },
    compactNow: (topic) => call('compact', topic === undefined ? {} : { topic }),
    status: () => call('status', {}),
    inspect: (topic) => call('inspect', { topic }),
    offsetForTime: (topic, partition, timestamp) => call('offsetForTime', { topic, partition, timestamp }),
    rebuildIndex: (topic) => call('rebuild', topic === undefined ? {} : { topic }),
    async close() {
      if (closing) return;
      closing = true;
      if (workerGone) return;
      const w = worker;
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      const timeout = setTimeout(() => void w.terminate(), CLOSE_TIMEOUT_MS);
      try {
        await call('close', {});
      } catch (err) {
        opts.log.warn('compaction worker did not close cleanly', { err });
      } finally {
        clearTimeout(timeout);
        await w.terminate();
        await exited;
      }
    },
  };
}
