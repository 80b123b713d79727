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
import type { Logger, LogLevel } from '../../common/log.js';

import type { TopicPolicy } from '../../engine/api/topic-policy.js';
import type { EngineOptions } from '../../engine/api/engine-options.js';
import { SurvivorIndex } from './survivor-index.js';
import { DemandNotes } from './demand-notes.js';
import type { EngineReplies, EngineRequest, FromWorker, ToWorker, WorkerConfig } from '../../engine/api/engine-protocol.js';
import { deserializeError, restoreFields } from '../../engine/api/worker-log.js';
import { restoreRecord } from '../../engine/api/table-reads.js';
import { LatestCache } from './latest-cache.js';
import { JudgedWrites } from './judged-writes.js';

const RESTART_DELAY_MS = 1000;
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

/** `options` go to the worker whole (engine-options.ts); its log lines come back through `log`. */
export async function startCompactionEngine(options: EngineOptions, log: Logger): Promise<CompactionEngine> {
  // Told again well within the idle time, so that a partition in use is never let go.
  const demand = new DemandNotes((partitions) => post({ type: 'demand', partitions }), Math.max(1_000, Math.floor(options.indexing.idleMs / 4)));
  // The worker answers after posting what its index published on the way: the snapshot is applied first.
  const index = new SurvivorIndex(
    (topic, partition, timeoutMs) => call('caughtUp', { topic, partition, timeoutMs }),
    (topic, partition) => demand.note(topic, partition),
  );
  const config: WorkerConfig = { ...options, logLevel: levelOf(log) };
  // A warm key's table read is answered here while its partition's index has not moved.
  const latestAnswers = new LatestCache();
  // A conditional write's verdict, from the ends the worker publishes as it ingests.
  const judgedWrites = new JudgedWrites((topic, partition) => index.end(topic, partition));
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
        latestAnswers.moved(m.topic, m.partition);
        break;
      case 'end':
        index.applyEnd(m.topic, m.partition, m.end);
        latestAnswers.moved(m.topic, m.partition);
        judgedWrites.published(m.topic, m.partition, m.end);
        break;
      case 'foreseen':
        judgedWrites.foreseen(m.write, m.at, m.verdict);
        break;
      case 'log':
        log[m.level](m.msg, m.fields ? restoreFields(m.fields) : undefined);
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
      w.on('error', (err) => log.error('compaction worker failed', { err }));
      w.on('exit', (code) => {
        workerGone = true;
        latestAnswers.clear();
        for (const call of pending.values()) call.reject(new Error(`compaction worker exited (code ${code})`));
        pending.clear();
        if (!isReady) reject(new Error(`compaction worker exited (code ${code}) before it was ready`));
        if (closing) return;
        log.error('compaction worker exited; restarting it', { code, restartInMs: RESTART_DELAY_MS });
        setTimeout(() => {
          if (closing) return;
          demand.forget();
          ready = spawn();
          ready.catch((err) => log.error('compaction worker did not restart', { err }));
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
    tables: {
      async latest(topic, partition, key, atLeast, timeoutMs) {
        const bytes = 'bytes' in key ? key.bytes : undefined;
        const kept = bytes && latestAnswers.get(topic, partition, bytes, atLeast);
        if (kept) return kept;
        const moves = latestAnswers.movesOf(topic, partition);
        const answer = await call('tableLatest', { topic, partition, key, atLeast, timeoutMs });
        if (answer.behind) return answer;
        if (answer.record) restoreRecord(answer.record);
        if (bytes) latestAnswers.put(topic, partition, bytes, answer, moves);
        return answer;
      },
      expect(topic, partition, written) {
        const write = judgedWrites.expect(topic, partition, written);
        post({ type: 'tableExpect', write, topic, partition, written });
        return () => {
          judgedWrites.forget(write);
          post({ type: 'tableForget', write });
        };
      },
      async verdict(topic, partition, offset, timeoutMs, written) {
        if (!written) return call('tableVerdict', { topic, partition, offset, timeoutMs });
        const known = judgedWrites.now(topic, partition, offset, written);
        if (known) return { verdict: known };
        // Whichever tells first: the worker asked, its foresight, or the end its ingest publishes.
        const watch = judgedWrites.watch(topic, partition, offset, written);
        try {
          return await Promise.race([call('tableVerdict', { topic, partition, offset, timeoutMs, written }), watch.verdict.then((verdict) => ({ verdict }))]);
        } finally {
          watch.cancel();
        }
      },
      async changes(topic, partition, from, key, limit, waitMs) {
        const answer = await call('tableChanges', { topic, partition, from, key, limit, waitMs });
        for (const r of answer.records) restoreRecord(r);
        return answer;
      },
    },
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
        log.warn('compaction worker did not close cleanly', { err });
      } finally {
        clearTimeout(timeout);
        await w.terminate();
        await exited;
      }
    },
  };
}
