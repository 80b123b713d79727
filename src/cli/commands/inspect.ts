/**
 * `kcompact inspect TOPIC [PARTITION]`: one compacted topic up close: its compaction configs and,
 * per partition, how far it is indexed and cleaned, what survives, the tombstones waiting for
 * their delete horizon and the dirty ratio.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { InspectReport } from '../../ops/admin-reports.js';
import { adminOptions, adminTarget, fromProxyOrDataDir, type AdminOptions } from './admin-target.js';
import { inspectFromDataDir } from './data-dir.js';
import { ago, count, printJson, ratio, table } from './render.js';

function partitionNumber(raw: string): number {
  if (!/^\d+$/.test(raw)) throw new InvalidArgumentError('expected a partition number (0, 1, ...)');
  return Number(raw);
}

export function renderInspect(r: InspectReport, now: number): string {
  const out: string[] = [`topic ${r.topic}`];
  if (r.source === 'data-dir') out.push('(from the data directory, read-only: the proxy is not running; dirty ratio with min.compaction.lag.ms=0)');
  if (r.configs) {
    out.push('', 'configs in force');
    const width = Math.max(...Object.keys(r.configs).map((k) => k.length));
    for (const [name, value] of Object.entries(r.configs)) out.push(`  ${name.padEnd(width)}  ${value}`);
  }
  out.push('');
  if (r.partitions.length === 0) {
    out.push('no partition indexed yet: the indexer has not found the topic upstream (produce to it or create it)');
    return out.join('\n') + '\n';
  }
  out.push(
    table(
      [
        'PARTITION',
        'LOG START',
        'CLEANED UP TO',
        'INDEXED UP TO',
        'HIGH WATERMARK',
        'SURVIVORS',
        'INDEXED RECORDS',
        'TOMBSTONES PENDING',
        'DIRTY RATIO',
        'SEGMENTS',
        'LAST CLEAN',
      ],
      r.partitions.map((p) => [
        String(p.partition),
        count(p.logStartOffset),
        count(p.cleanedUpTo),
        count(p.nextOffset),
        count(p.highWatermark),
        count(p.survivors),
        count(p.indexedRecords),
        count(p.tombstonesPending),
        ratio(p.dirtyRatio),
        String(p.segments),
        ago(p.lastCleanMs, now),
      ]),
    ).trimEnd(),
  );
  const identities = [...new Set(r.partitions.map((p) => p.keyIdentity).filter((k) => k !== ''))];
  if (identities.length > 0) out.push(`keys compared by: ${identities.join(', ')} (the keyIdentity setting the index was built with)`);
  for (const p of r.partitions) {
    if (p.uncleanable) out.push(`partition ${p.partition}: uncleanable (its last clean failed; \`kcompact compact ${r.topic}\` retries it)`);
    if (p.lastError) out.push(`partition ${p.partition}: last indexing error: ${p.lastError}`);
  }
  return out.join('\n') + '\n';
}

export function addInspectCommand(program: Command): void {
  const command = program
    .command('inspect')
    .description('show a compacted topic: configs, indexed and cleaned offsets, survivors, tombstones pending and dirty ratio per partition')
    .argument('<topic>', 'a compacted topic')
    .argument('[partition]', 'only this partition', partitionNumber)
    .addHelpText('after', '\nAsks the running proxy; when it does not answer and --data-dir is given, reads that directory read-only instead.');
  adminOptions(command, { dataDir: true }).action(async (topic: string, partition: number | undefined, opts: AdminOptions) => {
    const target = adminTarget(opts);
    const report = await fromProxyOrDataDir(
      target,
      () => target.endpoint.get<InspectReport>('/inspect', { topic, partition }),
      (dataDir) => inspectFromDataDir(dataDir, topic, partition),
    );
    if (target.json) printJson(report);
    else process.stdout.write(renderInspect(report, Date.now()));
  });
}
