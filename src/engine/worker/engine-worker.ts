/**
 * The compaction worker thread: the indexer, the cleaner and every SQLite write run here, so
 * that decoding the upstream log and cleaning never hold up the proxy's event loop. It talks to
 * the main thread only through messages (engine-protocol.ts); the engine itself is built by
 * engine-factory.ts, and this file only wires the thread's port to it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { FromWorker, ToWorker, WorkerConfig } from '../api/engine-protocol.js';
import { workerLogger } from '../api/worker-log.js';
import { collectWhenIdle } from '../../common/idle-collection.js';
import { createEngine } from './engine-factory.js';

if (!parentPort) throw new Error('engine-worker.js must run as a worker thread');
const port = parentPort;
const config = workerData as WorkerConfig;
const log = workerLogger(port, config.logLevel, { component: 'compaction' });

const engine = await createEngine(config, {
  log,
  send: (message: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer),
});
const idleCollection = collectWhenIdle(log);

function onMessage(message: ToWorker): void {
  engine.handle(message);
  if (message.type !== 'close') return;
  idleCollection.stop();
  // The engine answers the close itself; once it is closed the port is let go, and with nothing
  // left to wait for, the thread ends.
  void engine.close().then(detach, detach);
}

function detach(): void {
  port.off('message', onMessage);
}

port.on('message', onMessage);
port.postMessage({ type: 'ready' } satisfies FromWorker);
