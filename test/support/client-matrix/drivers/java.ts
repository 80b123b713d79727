/**
 * Java's kafka-clients through test/peers/java/src/JavaClient.java: JVMs kept for the whole run,
 * each asked one JSON line at a time (a JVM start costs more than most operations).
 */
import type { ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { javaArgs, javaBin } from '../../java.js';
import { spawnPiped, tail } from '../../processes.js';
import type { ClientDriver, ProduceRun } from '../types.js';

const ASK_TIMEOUT_MS = 90_000;

/** A running JavaClient: requests go one at a time, each answered by the next stdout line. */
class JavaSession {
  private readonly answers: string[] = [];
  private waiting: (() => void) | undefined;
  private stderr = '';
  private exited = false;

  private constructor(private readonly child: ChildProcess) {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      this.answers.push(line);
      this.waiting?.();
    });
    child.stderr!.on('data', (b: Buffer) => {
      this.stderr = (this.stderr + b.toString('utf8')).slice(-20_000);
    });
    child.once('exit', () => {
      this.exited = true;
      this.waiting?.();
    });
  }

  static start(): JavaSession {
    return new JavaSession(spawnPiped(javaBin(), javaArgs('JavaClient', [], 256)));
  }

  get alive(): boolean {
    return !this.exited;
  }

  async ask<T>(request: object): Promise<T> {
    this.child.stdin!.write(JSON.stringify(request) + '\n');
    const deadline = Date.now() + ASK_TIMEOUT_MS;
    while (this.answers.length === 0) {
      if (this.exited) throw new Error(`JavaClient exited; stderr tail:\n${tail(this.stderr)}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        this.child.kill('SIGKILL');
        throw new Error(`JavaClient gave no answer to ${JSON.stringify(request).slice(0, 200)} in ${ASK_TIMEOUT_MS} ms; stderr tail:\n${tail(this.stderr)}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiting = undefined;
    }
    const answer = JSON.parse(this.answers.shift()!) as T & { error?: string };
    if (answer.error !== undefined) throw new Error(`JavaClient ${(request as { op: string }).op}: ${answer.error}`);
    return answer;
  }

  async close(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await gone;
    clearTimeout(timer);
  }
}

/**
 * Up to this many JavaClient sessions answer side by side: a comparison asks the same of two
 * sides at once, and Java's share and group reads spend most of their time waiting.
 */
const SESSIONS = 2;

/** JavaClient answers one request at a time per session; callers beyond SESSIONS queue for one. */
function javaDriver(): ClientDriver {
  const sessions = new Set<JavaSession>();
  const idle: JavaSession[] = [];
  const queued: (() => void)[] = [];
  const inFlight = new Set<Promise<unknown>>();
  const acquire = async (): Promise<JavaSession> => {
    for (;;) {
      const session = idle.pop();
      if (session?.alive) return session;
      if (session) sessions.delete(session);
      else if (sessions.size < SESSIONS) {
        const started = JavaSession.start();
        sessions.add(started);
        return started;
      } else await new Promise<void>((resolve) => queued.push(resolve));
    }
  };
  const ask = <T>(request: object): Promise<T> => {
    const asked = (async () => {
      const session = await acquire();
      try {
        return await session.ask<T>(request);
      } finally {
        idle.push(session);
        queued.shift()?.();
      }
    })();
    const settled = asked.catch(() => undefined);
    inFlight.add(settled);
    void settled.then(() => inFlight.delete(settled));
    return asked;
  };
  const timeouts = { timeoutMs: 30_000 };
  return {
    id: 'java',
    name: 'Java kafka-clients',
    unsupported: {},
    notes: {},
    version: async () => (await ask<{ kafkaClients: string }>({ op: 'version' })).kafkaClients,
    async produce(b, f) {
      const a = await ask<{ partitions: number[]; offsets: number[]; keyless: string | null }>({
        op: 'produce',
        bootstrap: b,
        topic: f.topic,
        records: f.records,
        keylessValue: 'keyless',
        idempotence: f.idempotence,
      });
      const partitions: NonNullable<ProduceRun['partitions']> = {};
      a.offsets.forEach((offset, i) => {
        const p = (partitions[String(a.partitions[i])] ??= { count: 0, firstOffset: offset, lastOffset: offset });
        p.count++;
        p.firstOffset = Math.min(p.firstOffset, offset);
        p.lastOffset = Math.max(p.lastOffset, offset);
      });
      return { partitions, keyless: a.keyless };
    },
    group: (b, f) => ask({ op: 'group', bootstrap: b, topic: f.topic, group: f.group, count: f.count, ...timeouts }),
    transactions: (b, f) =>
      ask({
        op: 'txn',
        bootstrap: b,
        topic: f.topic,
        transactionalId: f.transactionalId,
        transactions: f.transactions,
        expected: f.transactions.filter((t) => t.commit).reduce((n, t) => n + t.records.length, 0),
        idleMs: 0,
        ...timeouts,
      }),
    configs: (b, f) => ask({ op: 'configs', bootstrap: b, topic: f.topic, partitions: f.partitions, create: f.create, alter: f.alter }),
    compactedRead: (b, f) => ask({ op: 'read', bootstrap: b, topic: f.topic, expected: f.expected.length, idleMs: f.idleMs, ...timeouts }),
    shareRead: (b, f) =>
      ask({
        op: 'share',
        bootstrap: b,
        topic: f.topic,
        group: f.group,
        isolation: f.isolation,
        expected: f.expected,
        idleMs: f.idleMs,
        release: f.release ?? false,
        members: f.members ?? 1,
        leave: f.leave ?? false,
        timeoutMs: 60_000,
      }),
    shareOffsets: (b, group, topic) => ask({ op: 'shareOffsets', bootstrap: b, group, topic }),
    close: async () => {
      await Promise.all(inFlight);
      await Promise.all([...sessions].map((s) => s.close()));
      sessions.clear();
      idle.length = 0;
    },
  };
}

export const javaClients: ClientDriver = javaDriver();
