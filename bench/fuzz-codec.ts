/*
 * Codec fuzzer (`make fuzz`): mutated and random frames through the request, response and record
 * batch decoders; see test/unit/protocol/codec-fuzzer.ts for what counts as a finding. Prints a
 * summary and exits 1 on a finding, naming the seed, frame index and the frame's bytes.
 *   node dist/bench/fuzz-codec.js [--seed N] [--frames N] [--start N] [--hang-ms N] [--max-rss-mib N]
 * Replay one frame: --seed S --start <frame> --frames 1.
 */
import { runCodecFuzz, type FuzzReport } from '../test/unit/protocol/codec-fuzzer.js';
import { table } from './text-table.js';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const value = Number(process.argv[i + 1]);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`--${name} needs a non-negative number, got ${process.argv[i + 1]}`);
    process.exit(2);
  }
  return value;
}

const seed = option('seed', Date.now() % 0x7fffffff);
const frames = option('frames', 1_000_000);
const start = option('start', 0);
const hangMs = option('hang-ms', 1000);
const maxRssBytes = option('max-rss-mib', 1024) * 1024 * 1024;

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

function print(report: FuzzReport): void {
  console.log(
    `seed ${report.seed}: ${report.frames} frames in ${(report.elapsedMs / 1000).toFixed(1)} s (${Math.round(report.frames / (report.elapsedMs / 1000))} frames/s)`,
  );
  console.log(
    `frames: ${Object.entries(report.byFrameKind)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  const rows = Object.entries(report.byDecoder).map(([decoder, s]) => [
    decoder,
    String(s.calls),
    String(s.ok),
    s.maxMs.toFixed(2),
    Object.entries(s.errors)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', ') || '-',
  ]);
  console.log(table([['decoder', 'calls', 'decoded', 'max ms/call', 'rejected (by error)'], ...rows]));
  console.log(
    `peak memory: rss ${mib(report.peakRssBytes)}, heap used ${mib(report.peakHeapUsedBytes)}, external + array buffers ${mib(report.peakExternalBytes)}`,
  );
  if (report.findings.length === 0) {
    console.log('findings: none');
    return;
  }
  console.log(`findings: ${report.findings.length}${report.findings.length >= 20 ? ' (first 20)' : ''}`);
  for (const f of report.findings) {
    console.log(`- ${f.kind} in ${f.decoder}, frame ${f.frame} (${f.target}); replay: --seed ${report.seed} --start ${f.frame} --frames 1`);
    console.log(`  ${f.detail.split('\n').join('\n  ')}`);
    console.log(`  hex: ${f.hex.length > 4096 ? `${f.hex.slice(0, 4096)}... (${f.hex.length / 2} bytes)` : f.hex}`);
  }
}

let last = Date.now();
const report = await runCodecFuzz({
  seed,
  frames,
  start,
  hangMs,
  maxRssBytes,
  onProgress: (done) => {
    if (Date.now() - last < 10_000) return;
    last = Date.now();
    process.stderr.write(`${done} frames...\n`);
  },
});
print(report);
process.exit(report.findings.length > 0 ? 1 : 0);
