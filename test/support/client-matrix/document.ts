/**
 * docs/client-matrix.md, written from a measured matrix, and a line diff against the page as it
 * stands, so a test can say exactly where the page and the measurement part.
 */
import type { Operation } from './types.js';

export type Outcome = 'pass' | 'fail' | 'n/a';

/** A footnote; its id is stable, so the page does not change when nothing else does. */
export interface Note {
  id: string;
  text: string;
}

export interface Cell {
  outcome: Outcome;
  note?: Note;
}

export interface Matrix {
  clients: { id: string; name: string; version: string }[];
  operations: { op: Operation; title: string; checks: string }[];
  upstreams: { title: string; cells: Map<string, Map<Operation, Cell>> }[];
}

export function renderMatrix(m: Matrix): string {
  const notes = new Map<string, string>();
  const cell = (c: Cell) => {
    if (!c.note) return c.outcome;
    notes.set(c.note.id, c.note.text);
    return `${c.outcome} [^${c.note.id}]`;
  };
  const out = [
    '# Client matrix',
    '',
    '<!-- Written by test/integration/client-matrix.test.ts with KCOMPACT_UPDATE_MATRIX=1; do not edit by hand. -->',
    '',
    'What each Kafka client does through kcompact, measured: `test/integration/client-matrix.test.ts` runs every cell',
    'below with the real client against a real upstream, checks the outcome, and fails when this page and what it',
    'measured differ (`KCOMPACT_UPDATE_MATRIX=1` rewrites the page from the measurement). Every topic is created through',
    'kcompact with `cleanup.policy=compact`; "n/a" marks an operation the client cannot do at all.',
    '',
    '| client | version |',
    '|---|---|',
    ...m.clients.map((c) => `| ${c.name} | ${c.version} |`),
  ];
  for (const u of m.upstreams) {
    out.push('', `## In front of ${u.title}`, '');
    out.push(`| client | ${m.operations.map((o) => o.title).join(' | ')} |`);
    out.push(`|---|${m.operations.map(() => '---').join('|')}|`);
    for (const c of m.clients) {
      const row = u.cells.get(c.id)!;
      out.push(`| ${c.name} | ${m.operations.map((o) => cell(row.get(o.op)!)).join(' | ')} |`);
    }
  }
  out.push('', '## What each cell checks', '');
  for (const o of m.operations) out.push(`- **${o.title}**: ${o.checks}`);
  if (notes.size) out.push('');
  for (const [id, text] of notes) out.push(`[^${id}]: ${text}`);
  return out.join('\n') + '\n';
}

/** The lines that differ, "-" as on the page, "+" as measured, with a line of context each side. */
export function lineDiff(page: string, measured: string): string {
  const a = page.split('\n');
  const b = measured.split('\n');
  // Longest common subsequence table, from the ends.
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  }
  const lines: { mark: ' ' | '-' | '+'; text: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ mark: ' ', text: a[i]! });
      i++;
      j++;
    } else if (i < a.length && (j === b.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      lines.push({ mark: '-', text: a[i++]! });
    } else {
      lines.push({ mark: '+', text: b[j++]! });
    }
  }
  const changed = (k: number) => lines[k] !== undefined && lines[k]!.mark !== ' ';
  return lines
    .filter((_, k) => changed(k - 1) || changed(k) || changed(k + 1))
    .map((l) => `${l.mark} ${l.text}`)
    .join('\n');
}
