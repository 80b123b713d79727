/**
 * The compaction budgets (issue 3) and the report of budget (b), shared by the compaction
 * benchmark and the scale benchmark, which checks the same budgets at 1,000 partitions.
 */
import { READ_TARGETS, type ReadResult, type ReadTarget } from './compaction-read.js';
import { median, table } from './text-table.js';

export const BUDGET = { ingestRecordsPerSec: 200_000, viewVsRaw: 10, viewVsKafka: 2, rssBytes: 300 * 2 ** 20, rssKeys: 10_000_000 } as const;

export const int = (x: number) => Math.round(x).toLocaleString('en-US');
export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
export const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

export function readReport(r: ReadResult): string[] {
  const c = r.config;
  const runsOf = (t: ReadTarget) => r.runs.filter((x) => x.target === t);
  const med = (t: ReadTarget, pick: (x: ReadResult['runs'][number]) => number) => median(runsOf(t).map(pick));
  const label: Record<ReadTarget, string> = {
    view: 'compacted view through kcompact',
    kafka: "Kafka 4.4's compacted topic",
    'raw-proxy': 'raw log through the proxy',
    'raw-direct': 'raw log direct (context)',
    'one-proxy': 'one-record topic through the proxy',
    'one-direct': 'one-record topic direct',
  };
  const rows = [['reader (franz-go, offset 0 to the end)', 'median s', 'records', 'fetches', 'batches', 'MB', 'records/s', 'all rounds s']];
  for (const t of READ_TARGETS) {
    const s = r.seconds[t];
    rows.push([
      label[t],
      s.toFixed(3),
      int(med(t, (x) => x.records)),
      int(med(t, (x) => x.requests.fetch)),
      int(med(t, (x) => x.batches)),
      (med(t, (x) => x.bytes) / 1e6).toFixed(1),
      int(med(t, (x) => x.records) / s),
      runsOf(t)
        .map((x) => x.seconds.toFixed(3))
        .join(' '),
    ]);
  }
  const vsRaw = r.seconds['raw-proxy'] / r.seconds.view;
  const vsKafka = r.seconds.view / r.seconds.kafka;
  const viewRecords = new Set(runsOf('view').map((x) => x.records));
  const kafkaRecords = new Set(runsOf('kafka').map((x) => x.records));
  const same = viewRecords.size === 1 && kafkaRecords.size === 1 && [...viewRecords][0] === [...kafkaRecords][0];
  const kc = r.produced.find((p) => p.target === 'kcompact')!.result;
  const first = (t: ReadTarget) => runsOf(t).find((x) => x.round === 1)?.seconds ?? NaN;
  const netView = r.seconds.view - r.seconds['one-proxy'];
  const netRaw = r.seconds['raw-proxy'] - r.seconds['one-proxy'];
  const netKafka = r.seconds.kafka - r.seconds['one-direct'];
  return [
    '(b) reading a compacted topic from offset 0 to its end',
    `  written: ${int(kc.records + 1)} records over ${int(c.keys)} keys${(c.partitions ?? 1) > 1 ? ` in ${c.partitions} partitions` : ''} (uniformly random updates, ${c.valueSize} B values), ${int(kc.records / Math.max(1, kc.batches))} records per batch, to each topic; then one roll record per partition`,
    `  after the roll: kcompact indexed it in ${r.fromRoll.kcompactIndexed.toFixed(2)} s and was clean ${r.fromRoll.kcompactCleaned.toFixed(2)} s after the roll (clean-now calls: ${r.cleanCalls.map((c) => `${c.toFixed(2)} s`).join(', ')}); Kafka's cleaner was done ${r.fromRoll.kafkaCleaned.toFixed(2)} s after the roll`,
    `  index on disk: ${mib(r.indexBytes.indexed)} indexed (${(r.indexBytes.indexed / r.rollOffset.kcompact.reduce((n, o) => n + o + 1, 0)).toFixed(1)} bytes per record), ${mib(r.indexBytes.cleaned)} after the clean`,
    `  ${c.rounds} round(s), each reading every target once in turn; the clock includes the client's connect, metadata and ListOffsets`,
    '',
    table(rows).replace(/^/gm, '  '),
    '',
    table([
      ['budget', 'value', 'budget', 'result'],
      ['raw log through the proxy / compacted view (time)', `${vsRaw.toFixed(1)}x`, `>= ${BUDGET.viewVsRaw}x`, verdict(vsRaw >= BUDGET.viewVsRaw)],
      ["compacted view / Kafka's compacted topic (time)", `${vsKafka.toFixed(2)}x`, `<= ${BUDGET.viewVsKafka}x`, verdict(vsKafka <= BUDGET.viewVsKafka)],
    ]).replace(/^/gm, '  '),
    `  net of a reader's fixed cost (the one-record topic, ${(1000 * r.seconds['one-proxy']).toFixed(0)} ms through the proxy, ${(1000 * r.seconds['one-direct']).toFixed(0)} ms direct; context, not the budget):`,
    `    raw log through the proxy / compacted view ${(netRaw / netView).toFixed(1)}x, compacted view / Kafka's compacted topic ${(netView / netKafka).toFixed(2)}x`,
    `  the first round, with nothing in the view cache yet (context): view ${first('view').toFixed(3)} s, Kafka ${first('kafka').toFixed(3)} s, ${(first('view') / first('kafka')).toFixed(2)}x;` +
      ` later rounds read what survives from the cache (${int(r.viewCache.reads)} reads answered from it, ${mib(r.viewCache.bytes)} held)`,
    `  the compacted view ${same ? 'returned as many records as Kafka' : `returned ${[...viewRecords].join('/')} records, Kafka ${[...kafkaRecords].join('/')}: they should be equal`}`,
  ];
}
