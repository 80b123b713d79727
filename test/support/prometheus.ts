/**
 * A reader of Prometheus' text exposition format (version 0.0.4), enough to check what a
 * scrape holds: # HELP and # TYPE per family, and samples with labels.
 */
import { httpRequest } from './http-request.js';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: string;
}

export class Exposition {
  constructor(
    readonly samples: readonly Sample[],
    readonly families: ReadonlyMap<string, Family>,
  ) {}

  /** Samples of a name whose labels include `labels`. */
  find(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }

  /** The sum of the matching samples; undefined when there is none. */
  value(name: string, labels: Record<string, string> = {}): number | undefined {
    const found = this.find(name, labels);
    return found.length === 0 ? undefined : found.reduce((n, s) => n + s.value, 0);
  }
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const m = LABEL.exec(text);
    if (!m) throw new Error(`bad labels in exposition line: ${line}`);
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  const n = Number(text);
  // prom-client writes "Nan" (Node's event-loop lag before its first sample); Prometheus parses it as Go's ParseFloat does, in any case.
  if (text.toLowerCase() !== 'nan' && Number.isNaN(n)) throw new Error(`bad sample value ${text}`);
  return n;
}

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, help: '', type: 'untyped' }));
    return f;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      if (meta[1] === 'HELP') family(meta[2]!).help = meta[3]!;
      else family(meta[2]!).type = meta[3]!;
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`bad exposition line: ${line}`);
    samples.push({ name: m[1]!, labels: m[2] ? parseLabels(m[2], line) : {}, value: parseValue(m[3]!) });
  }
  return new Exposition(samples, families);
}

/** GETs a metrics listener's /metrics and parses it; also returns the content type. */
export async function scrape(management: string): Promise<Exposition & { contentType: string }> {
  const res = await httpRequest(management, '/metrics');
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${res.body}`);
  return Object.assign(parseExposition(res.body), { contentType: res.headers['content-type'] ?? '' });
}
