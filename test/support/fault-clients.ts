/**
 * The Java clients of the fault tests (test/peers/java/src/FaultProducer.java, FaultConsumer.java)
 * as background processes: a test steers them through a control file ("run", "pause", "stop")
 * and reads what they report, line by line, while they run on through kills and outages.
 */
import fs from 'node:fs';
import path from 'node:path';
import { javaArgs, javaBin } from './java.js';
import { makeTempDir, pollUntil, startBackground, tail, type BackgroundProcess, type TempDir } from './processes.js';

type Wish = 'run' | 'pause' | 'stop';

class JavaPeer {
  private readonly temp: TempDir;
  private readonly control: string;
  private readonly stdout: string;
  private readonly stderr: string;
  private readonly proc: BackgroundProcess;

  constructor(
    readonly name: string,
    mainClass: string,
    flags: Record<string, string | number>,
    wish: Wish,
  ) {
    this.temp = makeTempDir(`kcompact-${name}-`);
    this.control = path.join(this.temp.path, 'control');
    this.stdout = path.join(this.temp.path, 'stdout.log');
    this.stderr = path.join(this.temp.path, 'stderr.log');
    fs.writeFileSync(this.control, wish);
    const args = Object.entries({ ...flags, control: this.control }).flatMap(([k, v]) => [`--${k}`, String(v)]);
    this.proc = startBackground(javaBin(), javaArgs(mainClass, args, 256), { stdoutFile: this.stdout, stderrFile: this.stderr });
  }

  /** Every complete line reported so far. */
  lines(): string[] {
    const text = fs.existsSync(this.stdout) ? fs.readFileSync(this.stdout, 'utf8') : '';
    return text.split('\n').slice(0, -1);
  }

  stderrTail(lines = 30): string {
    return tail(fs.existsSync(this.stderr) ? fs.readFileSync(this.stderr, 'utf8') : '', lines);
  }

  wish(wish: Wish): void {
    // Write then rename: the client never reads a half-written wish.
    fs.writeFileSync(`${this.control}.next`, wish);
    fs.renameSync(`${this.control}.next`, this.control);
  }

  /** Waits for a report line starting with `prefix` past the first `after` lines. */
  async waitFor(prefix: string, deadlineMs: number, after = 0): Promise<string> {
    const line = () =>
      this.lines()
        .slice(after)
        .find((l) => l.startsWith(prefix));
    return pollUntil(
      `${this.name} reports "${prefix}"`,
      deadlineMs,
      async () => line(),
      () => {
        const s = this.proc.exitStatus();
        // It may have reported the line just before it exited.
        return s && !line() ? `exited (code ${s.code}, signal ${s.signal}); stderr tail:\n${this.stderrTail()}` : undefined;
      },
    );
  }

  exited(): boolean {
    return this.proc.exitStatus() !== undefined;
  }

  async close(): Promise<void> {
    try {
      await this.proc.stop(10_000);
    } finally {
      this.temp.remove();
    }
  }
}

export interface Ack {
  index: number;
  partition: number;
  offset: number;
}

/** An idempotent acks=all Java producer of the bed's generated records (test/peers/README.md). */
export class FaultProducer extends JavaPeer {
  constructor(opts: { brokers: string; topic: string; keys: number; tombstoneEvery?: number; valueSize?: number; rate?: number; paused?: boolean }) {
    const flags = {
      brokers: opts.brokers,
      topic: opts.topic,
      keys: opts.keys,
      'tombstone-every': opts.tombstoneEvery ?? 0,
      'value-size': opts.valueSize ?? 32,
      rate: opts.rate ?? 400,
    };
    super('fault-producer', 'FaultProducer', flags, opts.paused ? 'pause' : 'run');
  }

  acks(): Ack[] {
    return this.lines()
      .filter((l) => l.startsWith('ack '))
      .map((l) => {
        const [, index, partition, offset] = l.split(' ');
        return { index: Number(index), partition: Number(partition), offset: Number(offset) };
      });
  }

  /** Waits until `more` records past those acknowledged so far are acknowledged. */
  async acknowledged(more: number, deadlineMs = 60_000): Promise<void> {
    const target = this.acks().length + more;
    try {
      await pollUntil(`${more} more records acknowledged`, deadlineMs, async () => (this.acks().length >= target ? true : undefined));
    } catch (err) {
      throw new Error(`${(err as Error).message}; producer stderr tail:\n${this.stderrTail()}`, { cause: err });
    }
  }

  /** Records that failed for good, as "I RETRIABLE CLASS: MESSAGE". */
  failures(): string[] {
    return this.lines()
      .filter((l) => l.startsWith('fail '))
      .map((l) => l.slice('fail '.length));
  }

  /** Stops sending and resolves, with the next record index, once every record sent has an outcome. */
  async pause(deadlineMs = 60_000): Promise<number> {
    const seen = this.lines().length;
    this.wish('pause');
    return Number((await this.waitFor('paused ', deadlineMs, seen)).split(' ')[1]);
  }

  resume(): void {
    this.wish('run');
  }

  /** Stops for good once every record sent has an outcome. */
  async finish(deadlineMs = 60_000): Promise<void> {
    this.wish('stop');
    await this.waitFor('stopped ', deadlineMs);
  }
}

export interface Consumed {
  partition: number;
  offset: number;
  key: string;
  /** The index of value-I-..., or null for a tombstone. */
  index: number | null;
}

/** A Java consumer-group member that polls and commits until told to stop. */
export class FaultConsumer extends JavaPeer {
  constructor(opts: { brokers: string; topic: string; group: string }) {
    super('fault-consumer', 'FaultConsumer', { brokers: opts.brokers, topic: opts.topic, group: opts.group }, 'run');
  }

  records(): Consumed[] {
    return this.lines()
      .filter((l) => l.startsWith('rec '))
      .map((l) => {
        const [, partition, offset, key, index] = l.split(' ');
        return { partition: Number(partition), offset: Number(offset), key: key!, index: index === '-' ? null : Number(index) };
      });
  }

  /** Exceptions poll or commit threw, and failed async commits, as "[commit-]error RETRIABLE CLASS: MESSAGE". */
  errors(): string[] {
    return this.lines().filter((l) => l.startsWith('error ') || l.startsWith('commit-error '));
  }

  async finish(deadlineMs = 30_000): Promise<void> {
    this.wish('stop');
    await this.waitFor('closed', deadlineMs);
  }
}
