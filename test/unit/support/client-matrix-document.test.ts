/**
 * docs/client-matrix.md as the client-matrix test writes it: footnotes once each, in order of
 * first use, and a diff that shows just the lines where the page and a measurement part.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lineDiff, renderMatrix, type Cell, type Matrix } from '../../support/client-matrix/document.js';
import type { Operation } from '../../support/client-matrix/types.js';

const OPS = [
  { op: 'produce', title: 'produce', checks: 'produces.' },
  { op: 'configs', title: 'admin configs', checks: 'alters.' },
] satisfies Matrix['operations'];

function row(cells: Record<string, Cell>): Map<Operation, Cell> {
  return new Map(Object.entries(cells) as [Operation, Cell][]);
}

const tool = { id: 'tool', text: 'The tool has no admin API.' };
const matrix: Matrix = {
  clients: [
    { id: 'lib', name: 'A library', version: '1.2.3' },
    { id: 'tool', name: 'A tool', version: '0.9' },
  ],
  operations: OPS,
  upstreams: ['Upstream one', 'Upstream two'].map((title, u) => ({
    title,
    cells: new Map([
      ['lib', row({ produce: { outcome: 'pass' }, configs: u === 0 ? { outcome: 'fail', note: { id: 'known', text: 'Fails here.' } } : { outcome: 'pass' } })],
      ['tool', row({ produce: { outcome: 'pass' }, configs: { outcome: 'n/a', note: tool } })],
    ]),
  })),
};

test('each upstream gets a table; cells carry their footnote, and each footnote is written once, in order of first use', () => {
  const page = renderMatrix(matrix);
  const lines = page.split('\n');
  assert.ok(lines.includes('| A library | 1.2.3 |'));
  assert.ok(lines.includes('## In front of Upstream one'));
  assert.ok(lines.includes('| client | produce | admin configs |'));
  assert.ok(lines.includes('| A library | pass | fail [^known] |'));
  assert.equal(lines.filter((l) => l === '| A tool | pass | n/a [^tool] |').length, 2);
  assert.deepEqual(
    lines.filter((l) => l.startsWith('[^')),
    ['[^known]: Fails here.', '[^tool]: The tool has no admin API.'],
  );
  assert.ok(lines.includes('- **admin configs**: alters.'));
  assert.ok(page.endsWith('\n') && !page.endsWith('\n\n'));
});

test('the diff shows changed lines, page first, with a line of context each side', () => {
  const page = 'a\nb\nc\nd\ne\nf\n';
  assert.equal(lineDiff(page, 'a\nb\nX\nd\ne\nf\n'), '  b\n- c\n+ X\n  d');
  assert.equal(lineDiff(page, page), '');
  assert.equal(lineDiff('', 'a\nb\n'), '+ a\n+ b\n  ', 'a missing page: every measured line is new');
});
