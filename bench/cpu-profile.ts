/**
 * Where a proxy process's CPU went, from the .cpuprofile files `node --cpu-prof` writes: self
 * time by function (mostly node's own socket and buffer code), and inclusive time of the
 * project's own functions, which names the caller behind that self time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cliPath } from './proxy-process.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/**
 * node names a profile CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; the main thread is
 * thread 0, worker threads count up from 1.
 */
export function profileThreadId(file: string): number | undefined {
  const m = /\.(\d+)\.(\d+)\.\d+\.cpuprofile$/.exec(file);
  return m ? Number(m[2]) : undefined;
}

export interface ProfileReportOptions {
  /** First words of the report; default "proxy CPU profile (<dir>)". */
  title?: string;
  /** Which .cpuprofile files of the dir to count; default all. */
  files?: (name: string) => boolean;
}

export function profileReport(dir: string, opts: ProfileReportOptions = {}): string {
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  const root = path.resolve(path.dirname(cliPath), '../../..') + '/';
  const label = (f: ProfileNode['callFrame']) => {
    const where = f.url.replace(/^file:\/\//, '').replace(root, '');
    return `${f.functionName || '(anonymous)'}${where ? ` ${where}:${f.lineNumber + 1}` : ''}`;
  };
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile') && (opts.files?.(f) ?? true));
  for (const file of files) {
    const prof = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
    const nodes = new Map(prof.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    prof.samples.forEach((id, i) => {
      const us = prof.timeDeltas[i] ?? 0;
      const frame = nodes.get(id)!.callFrame;
      if (frame.functionName === '(idle)') {
        idle += us;
        return;
      }
      busy += us;
      self.set(label(frame), (self.get(label(frame)) ?? 0) + us);
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const f = nodes.get(at)!.callFrame;
        if (!f.url.includes('/dist/src/')) continue;
        const key = label(f);
        if (seen.has(key)) continue;
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + us);
      }
    });
  }
  if (busy + idle === 0) return `no CPU profile found in ${dir}`;
  const title = opts.title ?? `proxy CPU profile (${dir})`;
  const top = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `  ${`${((100 * us) / busy).toFixed(1)}%`.padStart(6)}  ${`${(us / 1e6).toFixed(2)} s`.padStart(8)}  ${k}`)
      .join('\n');
  return [
    `${title}: busy ${(busy / 1e6).toFixed(1)} s, idle ${(idle / 1e6).toFixed(1)} s; shares of busy time`,
    'self time by function:',
    top(self, 20),
    "inclusive time of the project's functions:",
    top(inclusive, 15),
  ].join('\n');
}
