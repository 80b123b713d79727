/** Text output of the admin verbs: aligned tables and human numbers, times and rates. */

export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** "1 partition", "3 partitions". */
export function plural(n: number, word: string): string {
  return `${count(n)} ${word}${n === 1 ? '' : 's'}`;
}

export function ratio(r: number): string {
  return r.toFixed(2);
}

export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

/** How long ago an epoch-ms time was; 0 means it never happened. */
export function ago(epochMs: number, now: number): string {
  if (epochMs <= 0) return 'never';
  return `${duration(Math.max(0, now - epochMs))} ago`;
}

/** Rates as "1.2k/s", "3.4M/s". */
export function rate(perSecond: number): string {
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(1)}M/s`;
  if (perSecond >= 1e4) return `${(perSecond / 1e3).toFixed(1)}k/s`;
  return `${Math.round(perSecond)}/s`;
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}
