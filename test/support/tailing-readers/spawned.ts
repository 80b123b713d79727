/**
 * A tail reader that is a child process, started with startBackground: its own process group,
 * killed with the test process if not before, its output in files of a temp dir that a pump
 * reads every 100 ms (a soak reader runs for minutes and prints thousands of lines).
 */
import fs from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { makeTempDir, startBackground, tail, type BackgroundProcess, type TempDir } from '../processes.js';
import type { TailLog } from './log.js';
import type { ClientEvent } from './types.js';

const PUMP_MS = 100;
const STOP_GRACE_MS = 5_000;
/** kcat's librdkafka debug lines make stderr long: only its end is kept for messages. */
const STDERR_KEPT = 64 * 1024;

/** The bytes another process has appended to a file since the last read. */
class Appended {
  private pos = 0;

  constructor(readonly file: string) {}

  read(): Buffer {
    const fd = fs.openSync(this.file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      if (size <= this.pos) return Buffer.alloc(0);
      const buf = Buffer.alloc(size - this.pos);
      const n = fs.readSync(fd, buf, 0, buf.length, this.pos);
      this.pos += n;
      return buf.subarray(0, n);
    } finally {
      fs.closeSync(fd);
    }
  }
}

/** Cuts appended output into whole lines (UTF-8 safe across reads). */
export class Lines {
  private readonly decoder = new StringDecoder('utf8');
  private rest = '';

  push(chunk: Buffer): string[] {
    const parts = (this.rest + this.decoder.write(chunk)).split('\n');
    this.rest = parts.pop()!;
    return parts.filter((l) => l.length > 0);
  }
}

/** What to make of a child's output. */
export interface OutputHandler {
  stdout(chunk: Buffer): void;
  stderr(chunk: Buffer): void;
  /** Called on every pump while the child runs (deadlines of a wrapper). */
  tick?(): void;
}

export class ChildReader {
  private readonly dir: TempDir;
  private readonly stdoutFile: string;
  private readonly stderrFile: string;
  private proc: BackgroundProcess | undefined;
  private out: Appended | undefined;
  private err: Appended | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stderrText = '';
  private stopped = false;

  constructor(
    private readonly log: TailLog,
    private readonly handler: OutputHandler,
  ) {
    this.dir = makeTempDir('kcompact-tail-');
    this.stdoutFile = path.join(this.dir.path, 'stdout');
    this.stderrFile = path.join(this.dir.path, 'stderr');
  }

  /** A file in the reader's temp dir, for what the child reads (JavaClient's requests). */
  writeFile(name: string, content: string): string {
    const file = path.join(this.dir.path, name);
    fs.writeFileSync(file, content);
    return file;
  }

  /** Starts the child, unless stop() came first. */
  start(command: string, args: readonly string[]): void {
    if (this.stopped) return;
    this.proc = startBackground(command, args, { stdoutFile: this.stdoutFile, stderrFile: this.stderrFile });
    this.out = new Appended(this.stdoutFile);
    this.err = new Appended(this.stderrFile);
    // Unref'd like the child: a test that forgets stop() still ends.
    this.timer = setInterval(() => this.pump(), PUMP_MS);
    this.timer.unref();
  }

  stderrTail(lines = 40): string {
    return tail(this.stderrText, lines);
  }

  /** Reads what the child wrote since the last pump; once it has exited, the last of it and then the exit event. */
  private pump(): void {
    if (!this.proc || !this.out || !this.err || this.log.ended) return;
    const status = this.proc.exitStatus();
    this.readOutput();
    if (!status) {
      this.handler.tick?.();
      return;
    }
    clearInterval(this.timer);
    this.log.push({ event: 'exit', code: status.code, signal: status.signal });
  }

  /** stderr first: what a client logs of a fetch (kcat's fetchGrew) comes before the records it brought. */
  private readOutput(): void {
    const stderr = this.err!.read();
    if (stderr.length) {
      this.stderrText = (this.stderrText + stderr.toString('utf8')).slice(-STDERR_KEPT);
      this.handler.stderr(stderr);
    }
    const stdout = this.out!.read();
    if (stdout.length) this.handler.stdout(stdout);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (!this.proc) {
      if (!this.log.ended) this.log.push({ event: 'exit', code: null, signal: null });
      return;
    }
    await this.proc.stop(STOP_GRACE_MS);
    this.pump();
    this.dir.remove();
  }
}

/** A line the bed's CLIs print: an event, or JavaClient's answer to a request it could not run. */
export function parseEventLine(line: string): ClientEvent {
  try {
    const v = JSON.parse(line) as { event?: unknown; error?: unknown };
    if (typeof v.event === 'string') return v as ClientEvent;
    if (typeof v.error === 'string') return { event: 'error', message: v.error };
  } catch {
    // Reported below: these clients print nothing else on stdout.
  }
  return { event: 'error', message: `not an event on stdout: ${line}` };
}

/** The output of a client that prints its own events, one JSON line each. */
export function jsonEvents(log: TailLog): OutputHandler {
  const lines = new Lines();
  return {
    stdout: (chunk) => lines.push(chunk).forEach((l) => log.push(parseEventLine(l))),
    stderr: () => {},
  };
}
