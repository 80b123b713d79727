/**
 * `kcompact rebuild-index [TOPIC]`: the running proxy drops the topic's partition indexes (every
 * compacted topic's when none is named) and reads them again from the upstream; this command
 * follows the rebuild on stderr until every partition has caught up.
 */
import type { Command } from 'commander';
import { SYSTEM_CLOCK } from '../../common/clock.js';
import type { RebuildingPartition } from '../../engine/api/engine-protocol.js';
import type { PartitionStatus } from '../../engine/api/engine-reports.js';
import type { StatusReport } from '../../ops/admin-reports.js';
import { adminOptions, adminTarget, type AdminOptions } from './admin-target.js';
import { ProgressLine, type ProgressSample } from './progress.js';
import { count, duration, plural, printJson } from './render.js';

const POLL_MS = 500;

/**
 * Where a rebuild stands. A partition has caught up once its new index has heard from the
 * upstream, reached its last stable offset and got back to where the dropped index was (or to the
 * upstream's end, should the log have shrunk since).
 */
export function rebuildProgress(
  targets: readonly RebuildingPartition[],
  partitions: readonly PartitionStatus[],
): ProgressSample & { caughtUp: PartitionStatus[] } {
  const now = new Map(partitions.map((p) => [`${p.partition}\u0000${p.topic}`, p]));
  const sample = { done: 0, total: 0, partitionsDone: 0, partitions: targets.length, caughtUp: [] as PartitionStatus[] };
  for (const t of targets) {
    const p = now.get(`${t.partition}\u0000${t.topic}`);
    if (!p) {
      sample.total += t.indexedUpTo;
      continue;
    }
    const heard = t.indexedUpTo === 0 || p.highWatermark > 0;
    const caughtUp = heard && p.nextOffset >= Math.max(p.lastStableOffset, Math.min(t.indexedUpTo, p.highWatermark));
    sample.done += p.nextOffset;
    sample.total += caughtUp ? p.nextOffset : Math.max(t.indexedUpTo, p.lastStableOffset, p.nextOffset);
    if (caughtUp) {
      sample.partitionsDone++;
      sample.caughtUp.push(p);
    }
  }
  return sample;
}

export function addRebuildIndexCommand(program: Command): void {
  const command = program
    .command('rebuild-index')
    .description('drop the partition indexes of a compacted topic (of every one by default) and index it again from the upstream, showing progress')
    .argument('[topic]', 'the topic whose index to rebuild (default: every compacted topic)')
    .addHelpText(
      'after',
      '\nWhile an index is rebuilt, readers see the topic uncleaned (nothing is hidden that should be seen); once it has\n' +
        'caught up, the cleaner cleans it on its next round, or at once with `kcompact compact`. Progress goes to stderr.',
    );
  adminOptions(command, { dataDir: false }).action(async (topic: string | undefined, opts: AdminOptions) => {
    const target = adminTarget(opts);
    const started = Date.now();
    const { partitions: targets } = await target.endpoint.post<{ partitions: RebuildingPartition[] }>('/rebuild-index', { topic });
    const what = topic ?? 'every compacted topic';
    if (targets.length === 0) {
      if (target.json) printJson({ partitions: [], durationMs: 0 });
      else process.stdout.write(`nothing to rebuild: no partition of ${what} is indexed yet\n`);
      return;
    }
    const progress = new ProgressLine(process.stderr, `rebuilding the index of ${what}`);
    for (;;) {
      const status = await target.endpoint.get<StatusReport>('/status');
      const sample = rebuildProgress(targets, status.partitions);
      if (sample.partitionsDone === sample.partitions) {
        progress.finish(sample);
        const durationMs = Date.now() - started;
        if (target.json) {
          printJson({ partitions: sample.caughtUp, durationMs });
        } else {
          process.stdout.write(
            `rebuilt the index of ${plural(sample.partitions, 'partition')} of ${what} from the upstream: ${count(sample.done)} offsets in ${duration(durationMs)}; ` +
              `the cleaner cleans them on its next round, or now with \`kcompact compact${topic ? ` ${topic}` : ''}\`\n`,
          );
        }
        return;
      }
      progress.update(sample);
      await SYSTEM_CLOCK.sleep(POLL_MS);
    }
  });
}
