// Prints src/'s import graph by folder: lines per folder, folder-to-folder imports, the imports that
// run against the layering (LAYERS below: a folder may import only folders listed before it or
// its own), and import circles between files. `node scripts/import-graph.mjs [--fail]`.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(process.argv.find((a) => a.startsWith('--root='))?.slice(7) ?? 'src');
const fail = process.argv.includes('--fail');

// Lowest first. A folder not named here is reported as unlayered.
const LAYERS = (process.env.KCOMPACT_LAYERS ?? 'common,protocol,upstream,engine/api,engine,proxy,compaction,ops,tables,config,inject,cli')
  .split(',')
  .filter(Boolean);

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'generated' ? [] : files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const importRe = /^\s*(?:import|export)\s[^;]*?from\s+['"](\.[^'"]+)['"]/gms;
const sources = files(root);
const edges = new Map();
for (const file of sources) {
  const text = readFileSync(file, 'utf8');
  const targets = [];
  for (const m of text.matchAll(importRe)) {
    const statement = m[0];
    const typeOnly = /^\s*(?:import|export)\s+type\s/.test(statement);
    targets.push({ path: resolve(dirname(file), m[1]).replace(/\.js$/, '.ts'), typeOnly });
  }
  edges.set(file, targets);
}

const folderOf = (file) => {
  const rel = relative(root, dirname(file));
  const parts = rel.split('/');
  return parts.slice(0, 2).join('/') || '.';
};
const topOf = (file) => relative(root, file).split('/')[0];

const lines = new Map();
for (const file of files(root).concat()) {
  const f = folderOf(file);
  lines.set(f, (lines.get(f) ?? 0) + readFileSync(file, 'utf8').split('\n').length - 1);
}
console.log('lines per folder (src/protocol/generated left out):');
for (const [f, n] of [...lines].sort()) console.log(`  ${f.padEnd(32)} ${n}`);

const folderEdges = new Map();
for (const [from, targets] of edges) {
  for (const t of targets) {
    const a = folderOf(from);
    const b = folderOf(t.path);
    if (a === b) continue;
    const key = `${a} -> ${b}`;
    folderEdges.set(key, (folderEdges.get(key) ?? 0) + 1);
  }
}
console.log(`\nfolder-to-folder imports: ${folderEdges.size} pairs`);
for (const [k, n] of [...folderEdges].sort()) console.log(`  ${k} (${n})`);

let against = 0;
if (LAYERS.length) {
  const rank = (file) => {
    const rel = relative(root, file);
    // The longest layer that holds the file: engine/api/x.ts is in engine/api, not engine.
    let best = -1;
    let length = -1;
    LAYERS.forEach((layer, i) => {
      if ((rel === layer || rel.startsWith(layer + '/')) && layer.length > length) [best, length] = [i, layer.length];
    });
    return best;
  };
  console.log('\nimports against the layering:');
  for (const [from, targets] of edges) {
    for (const t of targets) {
      if (rank(t.path) > rank(from)) {
        against++;
        console.log(`  ${relative(root, from)} -> ${relative(root, t.path)}`);
      }
    }
  }
  console.log(`  ${against} in all`);
}

// Circles: strongly connected components of the file graph (value imports and type imports alike).
let index = 0;
const stack = [];
const state = new Map();
const circles = [];
function strong(v) {
  const s = { index, low: index, on: true };
  index++;
  state.set(v, s);
  stack.push(v);
  for (const { path: w } of edges.get(v) ?? []) {
    if (!edges.has(w)) continue;
    const t = state.get(w);
    if (!t) {
      strong(w);
      s.low = Math.min(s.low, state.get(w).low);
    } else if (t.on) s.low = Math.min(s.low, t.index);
  }
  if (s.low === s.index) {
    const c = [];
    let w;
    do {
      w = stack.pop();
      state.get(w).on = false;
      c.push(relative(root, w));
    } while (w !== v);
    if (c.length > 1) circles.push(c);
  }
}
for (const v of edges.keys()) if (!state.has(v)) strong(v);
console.log(`\nimport circles: ${circles.length}`);
for (const c of circles) console.log(`  ${c.sort().join(' <-> ')}`);
void topOf;
if (fail && (against > 0 || circles.length > 0)) process.exit(1);
