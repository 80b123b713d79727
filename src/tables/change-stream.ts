/**
 * GET /v1/topics/{topic}/changes: the records of a compacted topic as they reach the index,
 * streamed as Server-Sent Events or NDJSON (docs/tables.md, "Changes"). One loop per partition,
 * each with its own cursor, long-polls the index; the key prefix is matched here, on the key's
 * bytes. A stream ends when its client goes, when the proxy stops, or on the first failure (a last
 * event says what failed; the client resumes from the last id it got).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ResponseWriter } from '../common/http1/server.js';
import type { TableKey, TableRecord } from '../engine/api/table-reads.js';
import { ApiError, apiErrorOf } from './api-error.js';
import { formatCursor, ndjsonLine, sseCursor, sseEvent, sseRetry, type Cursor } from './change-framing.js';
import { recordJson } from './record-json.js';
import { readsOf, type TableDeps } from './table-deps.js';
import type { Changes } from './table-request.js';

export interface ChangeStreamOptions {
  /** Records asked of the index per call. */
  limit: number;
  /** How long one call waits for a first record. */
  waitMs: number;
  /** An idle SSE stream gets a comment this often, so that proxies between keep it open. */
  heartbeatMs: number;
  /** How long an EventSource waits before it reconnects. */
  retryMs: number;
}

export const DEFAULT_CHANGE_STREAM: ChangeStreamOptions = { limit: 500, waitMs: 10_000, heartbeatMs: 15_000, retryMs: 1_000 };

/** An index that answers an empty long-poll at once is not asked again sooner than this. */
const MIN_EMPTY_POLL_MS = 100;

const CONTENT_TYPE = { sse: 'text/event-stream; charset=utf-8', ndjson: 'application/x-ndjson; charset=utf-8' } as const;

export class ChangeStreams {
  private readonly streams = new Set<ChangeStream>();
  private readonly opts: ChangeStreamOptions;

  constructor(
    private readonly deps: TableDeps,
    opts: Partial<ChangeStreamOptions> = {},
  ) {
    this.opts = { ...DEFAULT_CHANGE_STREAM, ...opts };
  }

  /** Streams open now. */
  get open(): number {
    return this.streams.size;
  }

  /**
   * Checks the request against the index and the store, then answers 200 and streams in the
   * background. Rejects (nothing written yet) when the request cannot be served.
   */
  async start(req: Changes, res: ResponseWriter): Promise<void> {
    const reads = readsOf(this.deps);
    const count = await this.deps.partitions.count(req.topic);
    if (req.partition !== undefined && req.partition >= count) {
      throw new ApiError(
        404,
        `${req.topic} has no partition ${req.partition}: it has ${count} (0 to ${count - 1})`,
        'give a partition the topic has, or none for all',
      );
    }
    const partitions = req.partition !== undefined ? [req.partition] : Array.from({ length: count }, (_, p) => p);
    for (const p of req.resume?.keys() ?? []) {
      if (!partitions.includes(p)) {
        throw new ApiError(400, `Last-Event-ID names partition ${p}, which this stream does not read`, 'resume a stream with the same partition= it had');
      }
    }
    // Asking for no records checks that the index serves the topic and says where it ends (from=now).
    const ends = await Promise.all(partitions.map(async (p) => (await reads.changes(req.topic, p, 0, null, 0, 0)).next));
    const next = new Map(partitions.map((p, i) => [p, startOf(req, p, ends[i]!)]));
    const stream = new ChangeStream(this.deps, this.opts, req, res, next, () => this.streams.delete(stream));
    this.streams.add(stream);
    stream.run();
  }

  /** Ends every stream (the proxy is stopping); clients reconnect with their last id. */
  closeAll(): void {
    for (const s of [...this.streams]) s.end();
  }
}

function startOf(req: Changes, partition: number, end: number): number {
  const resumed = req.resume?.get(partition);
  if (resumed !== undefined) return resumed + 1;
  return req.from === 'now' ? end : req.from;
}

const startsWith = (key: Buffer, prefix: Buffer) => key.length >= prefix.length && key.subarray(0, prefix.length).equals(prefix);

class ChangeStream {
  private ended = false;
  private lastWriteMs = Date.now();
  private readonly key: TableKey | null;
  private readonly prefix: Buffer | null;

  constructor(
    private readonly deps: TableDeps,
    private readonly opts: ChangeStreamOptions,
    private readonly req: Changes,
    private readonly res: ResponseWriter,
    /** Per partition, the next offset to ask the index for. */
    private readonly next: Map<number, number>,
    private readonly onEnd: () => void,
  ) {
    this.key = req.filter && 'key' in req.filter ? req.filter.key : null;
    this.prefix = req.filter && 'prefix' in req.filter ? req.filter.prefix : null;
  }

  run(): void {
    this.res.writeHead(200, { 'content-type': CONTENT_TYPE[this.req.format], 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    this.res.on('close', () => this.end());
    this.deps.metrics?.watcherOpened();
    // A reconnect before the first record resumes here, not at a later "now".
    if (this.req.format === 'sse') this.write(sseRetry(this.opts.retryMs) + sseCursor(this.cursor()));
    else this.res.flushHeaders();
    for (const p of this.next.keys()) {
      this.follow(p).catch((err: unknown) => this.fail(err, p));
    }
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.deps.metrics?.watcherClosed();
    this.onEnd();
    this.res.end();
  }

  /** Each partition's last offset sent, or passed over by the filter. */
  private cursor(): string {
    const sent: Cursor = new Map([...this.next].map(([p, o]) => [p, o - 1]));
    return formatCursor(sent);
  }

  private async follow(partition: number): Promise<void> {
    const reads = readsOf(this.deps);
    const { topic } = this.req;
    while (!this.ended) {
      const asked = Date.now();
      const answer = await reads.changes(topic, partition, this.next.get(partition)!, this.key, this.opts.limit, this.opts.waitMs);
      if (this.ended) return;
      for (const r of answer.records) {
        this.next.set(partition, r.offset + 1);
        if (this.prefix && !startsWith(r.key, this.prefix)) continue;
        await this.send(r);
        if (this.ended) return;
      }
      this.next.set(partition, Math.max(this.next.get(partition)!, answer.next));
      if (answer.records.length > 0) continue;
      if (this.req.format === 'sse' && Date.now() - this.lastWriteMs >= this.opts.heartbeatMs) await this.write(sseCursor(this.cursor(), 'idle'));
      const elapsed = Date.now() - asked;
      if (elapsed < MIN_EMPTY_POLL_MS) await sleep(MIN_EMPTY_POLL_MS - elapsed);
    }
  }

  private send(r: TableRecord): Promise<void> {
    const json = recordJson(r, this.req.encoding, { markDeleted: true });
    return this.write(this.req.format === 'sse' ? sseEvent(json, { id: this.cursor() }) : ndjsonLine(json));
  }

  /** Resolves once the chunk is buffered below the socket's mark, or the client has gone. */
  private write(chunk: string): Promise<void> {
    if (this.ended) return Promise.resolve();
    this.lastWriteMs = Date.now();
    if (this.res.write(chunk)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  private fail(err: unknown, partition: number): void {
    if (this.ended) return;
    const e = apiErrorOf(err, `reading the changes of ${this.req.topic}-${partition}`);
    const fields = { topic: this.req.topic, partition, status: e.status, err };
    if (e.status >= 500) this.deps.log.warn('a change stream failed', fields);
    else this.deps.log.debug('a change stream failed', fields);
    const body = { ...e.body, partition };
    void this.write(this.req.format === 'sse' ? sseEvent(body, { event: 'failed' }) : ndjsonLine(body));
    this.end();
  }
}
