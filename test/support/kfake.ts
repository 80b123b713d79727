/**
 * franz-go's kfake as a separate process: an independent Kafka implementation. It compacts only
 * topics whose own cleanup.policy is compact, on its own timer (log.cleaner.backoff.ms, an hour by
 * default); kcompact creates its compacted topics there without that policy, so kfake keeps
 * every record of them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { binDir } from './paths.js';
import { makeTempDir, pollUntil, startBackground, tail } from './processes.js';

export interface KfakeBroker {
  nodeId: number;
  host: string;
  port: number;
}

export interface KfakeOptions {
  /** Number of brokers on OS-chosen ports (default 3); ignored when ports is given. */
  brokers?: number;
  ports?: number[];
  /** Partitions of auto-created topics and of CreateTopics with -1 (default 1, like Kafka). */
  partitions?: number;
  brokerConfigs?: Record<string, string>;
  /**
   * APIs (kmsg's names, e.g. DeleteRecords, InitProducerID) left out of ApiVersions, as a store
   * that does not implement them; a request for one closes the connection, as Kafka does.
   */
  withhold?: string[];
  /**
   * Codecs (none, gzip, snappy, lz4, zstd) a produced batch may use; a request with a batch of
   * another is answered UNSUPPORTED_COMPRESSION_TYPE. Every codec when absent.
   */
  codecs?: string[];
  /**
   * Serve Fetch answers in batches of kfake's own, as an event store that keeps records one by
   * one does: every data batch as one uncompressed batch per record, offsets, timestamps,
   * producer and flags kept (kfake's --rebatch).
   */
  rebatch?: boolean;
  startTimeoutMs?: number;
}

export interface RunningKfake {
  bootstrap: string;
  brokers: KfakeBroker[];
  stderrTail(lines?: number): string;
  stop(): Promise<void>;
}

export async function startKfake(opts: KfakeOptions = {}): Promise<RunningKfake> {
  const temp = makeTempDir('kcompact-kfake-');
  const dir = temp.path;
  const stdoutFile = path.join(dir, 'stdout.log');
  const stderrFile = path.join(dir, 'stderr.log');
  const args = opts.ports ? ['--ports', opts.ports.join(',')] : ['--brokers', String(opts.brokers ?? 3)];
  args.push('--partitions', String(opts.partitions ?? 1));
  for (const [k, v] of Object.entries(opts.brokerConfigs ?? {})) args.push('--broker-config', `${k}=${v}`);
  if (opts.withhold?.length) args.push('--withhold', opts.withhold.join(','));
  if (opts.codecs?.length) args.push('--codecs', opts.codecs.join(','));
  if (opts.rebatch) args.push('--rebatch');
  const proc = startBackground(path.join(binDir, 'kfake'), args, { stdoutFile, stderrFile });
  const stderrTail = (lines = 40) => tail(fs.existsSync(stderrFile) ? fs.readFileSync(stderrFile, 'utf8') : '', lines);
  const stop = async () => {
    try {
      await proc.stop(5_000);
    } finally {
      temp.remove();
    }
  };
  try {
    // kfake prints its addresses as one JSON line once every broker listens.
    const announced = await pollUntil(
      'kfake',
      opts.startTimeoutMs ?? 10_000,
      async () => {
        const out = fs.readFileSync(stdoutFile, 'utf8');
        return out.includes('\n') ? (JSON.parse(out.slice(0, out.indexOf('\n'))) as { bootstrap: string; brokers: KfakeBroker[] }) : undefined;
      },
      () => {
        const s = proc.exitStatus();
        return s ? `exited (code ${s.code}, signal ${s.signal}) while starting` : undefined;
      },
    );
    return { bootstrap: announced.bootstrap, brokers: announced.brokers, stderrTail, stop };
  } catch (e) {
    const message = `${(e as Error).message}\nkfake stderr tail:\n${stderrTail()}`;
    await stop();
    throw new Error(message, { cause: e });
  }
}
