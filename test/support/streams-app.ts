/**
 * The test bed's Kafka Streams app (test/peers/java/src/StreamsKeyCount.java): counts an input
 * topic's records by key into a store with a changelog topic, and reports on stdout, as JSON
 * lines, its state changes, what each restore replayed and the store's contents.
 */
import fs from 'node:fs';
import path from 'node:path';
import { javaArgs, javaBin } from './java.js';
import { pollUntil, startBackground, tail } from './processes.js';

export interface StreamsAppOptions {
  bootstrap: string;
  applicationId: string;
  input: string;
  output: string;
  /** Streams' state.dir (the store's local copy). */
  stateDir: string;
  /** Where the app's stdout and stderr go; reused across restarts (each run appends). */
  logDir: string;
  store?: string;
  /** Any Streams configs, e.g. topic.segment.ms for the internal topics Streams creates. */
  configs?: Record<string, string>;
}

export type StreamsEvent =
  | { event: 'state'; state: string; previous: string }
  | { event: 'restore-start'; store: string; topic: string; partition: number; startOffset: number; endOffset: number }
  | { event: 'restored'; store: string; topic: string; partition: number; records: number }
  | { event: 'store'; counts: Record<string, number> }
  | { event: 'closed' };

export interface RunningStreamsApp {
  /** The changelog topic of the store, as Streams names it. */
  changelog: string;
  /** This run's events so far, in order. */
  events(): StreamsEvent[];
  /** Waits for an event of this run that `match` accepts. */
  waitFor<E extends StreamsEvent>(what: string, match: (e: StreamsEvent) => e is E, deadlineMs?: number): Promise<E>;
  stderrTail(lines?: number): string;
  /** SIGTERM: the app closes Streams (committing, checkpointing) before it exits. */
  stop(): Promise<void>;
}

export function startStreamsApp(opts: StreamsAppOptions): RunningStreamsApp {
  const store = opts.store ?? 'counts';
  const stdoutFile = path.join(opts.logDir, 'streams.stdout.log');
  const stderrFile = path.join(opts.logDir, 'streams.stderr.log');
  // Each run appends: this run's events start where the file ends now.
  const from = fs.existsSync(stdoutFile) ? fs.statSync(stdoutFile).size : 0;
  const args = [
    '--bootstrap',
    opts.bootstrap,
    '--application-id',
    opts.applicationId,
    '--input',
    opts.input,
    '--output',
    opts.output,
    '--state-dir',
    opts.stateDir,
    '--store',
    store,
    ...Object.entries(opts.configs ?? {}).flatMap(([k, v]) => ['--config', `${k}=${v}`]),
  ];
  const proc = startBackground(javaBin(), javaArgs('StreamsKeyCount', args, 256), { cwd: opts.logDir, stdoutFile, stderrFile });
  const stderrTail = (lines = 40) => tail(fs.existsSync(stderrFile) ? fs.readFileSync(stderrFile, 'utf8') : '', lines);
  const events = (): StreamsEvent[] => {
    const lines = fs.readFileSync(stdoutFile).subarray(from).toString('utf8').split('\n');
    // The last piece is empty or a line still being written.
    lines.pop();
    return lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as StreamsEvent);
  };
  return {
    changelog: `${opts.applicationId}-${store}-changelog`,
    events,
    waitFor: (what, match, deadlineMs = 60_000) =>
      pollUntil(
        `streams app: ${what}`,
        deadlineMs,
        async () => events().find(match),
        () => {
          const s = proc.exitStatus();
          return s ? `exited (code ${s.code}, signal ${s.signal}); stderr tail:\n${stderrTail()}` : undefined;
        },
      ),
    stderrTail,
    stop: () => proc.stop(30_000),
  };
}
