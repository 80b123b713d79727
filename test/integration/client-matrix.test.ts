/**
 * The client matrix (docs/client-matrix.md): Java kafka-clients, librdkafka (through Python's
 * confluent-kafka and through kcat), kafkajs, franz-go and kafka-python each produce, consume in
 * a group, run transactions, administer topic configs, read a compacted topic from offset 0 and
 * read it in a share group (the clients with a share consumer), through kcompact in front of Kafka 4.4 with its cleaner off and in front of kfake. Every cell
 * is a real run of the client checked against the upstream (test/support/client-matrix); an
 * operation a client lacks is "n/a" with the reason. The page must say what was measured:
 * KCOMPACT_UPDATE_MATRIX=1 rewrites it, otherwise a difference fails with a diff.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CLIENTS } from '../support/client-matrix/drivers/index.js';
import { lineDiff, renderMatrix, type Cell, type Matrix } from '../support/client-matrix/document.js';
import { Harness } from '../support/client-matrix/harness.js';
import { OPERATIONS, type OperationCheck } from '../support/client-matrix/operations/index.js';
import type { ClientDriver, Operation } from '../support/client-matrix/types.js';
import { KAFKA_VERSION, peersSourceDir } from '../support/paths.js';
import { requirePeers, TEST_BED } from '../support/peers.js';
import type { UpstreamKind } from '../support/uncompacted-upstream.js';

const PAGE = path.resolve(peersSourceDir, '../../docs/client-matrix.md');
const UPDATE = process.env.KCOMPACT_UPDATE_MATRIX === '1';
/** Clients run side by side, each through its operations in turn. */
const CONCURRENT_CLIENTS = 3;

const UPSTREAMS: { kind: UpstreamKind; title: string }[] = [
  { kind: 'kafka', title: `Apache Kafka ${KAFKA_VERSION} with its log cleaner off` },
  { kind: 'kfake', title: "kfake (franz-go's own Kafka implementation, 3 brokers), which compacts none of these topics itself" },
];

/**
 * Cells that fail for a known reason, by "upstream/client/operation", with the reason (a footnote
 * on the page). Any other failure fails the test whatever the page says.
 */
const KNOWN_FAILURES: Record<string, string> = {};

const slug = (op: Operation) => op.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

interface Measured {
  cell: Cell;
  /** Why it failed, for the test's output. */
  reason?: string;
  ms: number;
}

async function measure(h: Harness, client: ClientDriver, check: OperationCheck): Promise<Measured> {
  const id = `${client.id}-${slug(check.op)}`;
  const started = Date.now();
  const unsupported = client.unsupported[check.op];
  if (unsupported) return { cell: { outcome: 'n/a', note: { id, text: unsupported } }, ms: 0 };
  try {
    await check.run(h, client, `mx-${h.kind}-${id}`);
    const note = client.notes[check.op];
    return { cell: { outcome: 'pass', ...(note ? { note: { id, text: note } } : {}) }, ms: Date.now() - started };
  } catch (e) {
    const known = KNOWN_FAILURES[`${h.kind}/${client.id}/${check.op}`];
    const note = known ? { id: `${h.kind}-${id}`, text: known } : { id: 'unexplained', text: 'A failure with no known cause: the test prints its reason.' };
    return { cell: { outcome: 'fail', note }, reason: (e as Error).message, ms: Date.now() - started };
  }
}

/** Runs `work` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(limit, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

test('client matrix: every client family through kcompact, in front of Kafka 4.4 and kfake', { timeout: 600_000 }, async (t) => {
  if (!requirePeers(t, [...TEST_BED, 'kcat'])) return;
  for (const c of CLIENTS) {
    for (const o of OPERATIONS) {
      assert.equal(c[o.op] === undefined, c.unsupported[o.op] !== undefined, `${c.name}: ${o.op} is either implemented or unsupported with a reason`);
    }
  }
  const failures: string[] = [];
  const upstreams: Matrix['upstreams'] = [];
  try {
    for (const u of UPSTREAMS) {
      const h = await Harness.start(u.kind);
      const cells = new Map<string, Map<Operation, Cell>>();
      try {
        await eachLimited(CLIENTS, CONCURRENT_CLIENTS, async (client) => {
          const row = new Map<Operation, Cell>();
          cells.set(client.id, row);
          for (const check of OPERATIONS) {
            const m = await measure(h, client, check);
            row.set(check.op, m.cell);
            t.diagnostic(`${u.kind} ${client.id} ${check.op}: ${m.cell.outcome} (${m.ms} ms)${m.reason ? `: ${m.reason}` : ''}`);
            if (m.reason && m.cell.note?.id === 'unexplained') failures.push(`${u.kind} ${client.name} ${check.title}: ${m.reason}`);
          }
        });
        // A client may recover from a closed connection, but kcompact must read whatever the store answers.
        if (h.unreadableAnswers > 0) failures.push(`${u.kind}: kcompact could not read ${h.unreadableAnswers} of its answers (the proxy's warnings say which)`);
      } finally {
        await h.stop();
      }
      upstreams.push({ title: u.title, cells });
    }
    const clients = await Promise.all(CLIENTS.map(async (c) => ({ id: c.id, name: c.name, version: await c.version() })));
    const page = renderMatrix({ clients, operations: OPERATIONS.map(({ op, title, checks }) => ({ op, title, checks })), upstreams });
    for (const line of page.split('\n')) if (line.startsWith('|')) t.diagnostic(line);
    assert.deepEqual(failures, [], 'cells failed with no known cause (fix them, or explain them in KNOWN_FAILURES)');
    if (UPDATE) {
      fs.writeFileSync(PAGE, page);
      t.diagnostic(`wrote ${PAGE}`);
      return;
    }
    const current = fs.existsSync(PAGE) ? fs.readFileSync(PAGE, 'utf8') : '';
    if (current !== page) {
      assert.fail(
        `${path.relative(process.cwd(), PAGE)} does not say what was measured (run with KCOMPACT_UPDATE_MATRIX=1 to rewrite it):\n${lineDiff(current, page)}`,
      );
    }
  } finally {
    await Promise.all(CLIENTS.map((c) => c.close?.()));
  }
});
