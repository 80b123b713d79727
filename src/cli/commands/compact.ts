/**
 * `kcompact compact [TOPIC]`: clean now, on the running proxy, every compacted topic or the one
 * named, whether or not its dirty ratio asks for it; the proxy first indexes what the upstream
 * holds, so the clean covers everything produced before the command.
 */
import type { Command } from 'commander';
import type { CleanReport } from '../../engine/api/engine-reports.js';
import { adminOptions, adminTarget, type AdminOptions } from './admin-target.js';
import { CliError } from './cli-error.js';
import { count, duration, printJson } from './render.js';

export function renderCleanReport(r: CleanReport, topic: string | undefined): string {
  const out: string[] = [];
  for (const c of r.cleaned) {
    out.push(
      `cleaned ${c.topic}-${c.partition} up to offset ${count(c.endOffset)}: ${count(c.removed)} records removed ` +
        `(${count(c.tombstonesRemoved)} tombstones, ${count(c.markersRemoved)} transaction markers) in ${duration(c.durationMs)}`,
    );
  }
  for (const c of r.carried ?? []) {
    out.push(
      `carried ${c.topic}-${c.partition} forward: ${count(c.copies)} survivors copied (${count(c.bytesWritten)} bytes) in ${duration(c.durationMs)}; ` +
        (c.released
          ? `the store let offsets below ${count(c.releaseEnd)} go`
          : c.keptFor
            ? `the store keeps offsets from ${count(c.keptFor.offset)} (share group ${c.keptFor.group} has not finished them) until the group moves on`
            : `the store keeps offsets below ${count(c.releaseEnd)} until its own retention`),
    );
  }
  for (const t of r.retention) {
    out.push(
      `retention moved the log start of ${t.topic}-${t.partition} to ${count(t.logStartOffset)}${t.upstream ? '' : ' (in the index only: the upstream did not delete the records)'}`,
    );
  }
  if (out.length === 0 && r.failed.length === 0) out.push(`nothing to clean: no partition of ${topic ?? 'any compacted topic'} is indexed yet`);
  return out.join('\n') + (out.length > 0 ? '\n' : '');
}

export function addCompactCommand(program: Command): void {
  const command = program
    .command('compact')
    .description('clean now: every compacted topic, or the one named, on the running proxy')
    .argument('[topic]', 'the topic to clean (default: every compacted topic)');
  adminOptions(command, { dataDir: false }).action(async (topic: string | undefined, opts: AdminOptions) => {
    const target = adminTarget(opts);
    const report = await target.endpoint.post<CleanReport>('/compact', { topic });
    if (target.json) printJson(report);
    else process.stdout.write(renderCleanReport(report, topic));
    if (report.failed.length > 0) {
      throw new CliError(
        `cleaning failed for ${report.failed.map((f) => `${f.topic}-${f.partition} (${f.error})`).join(', ')}; the proxy's log has the details`,
      );
    }
  });
}
