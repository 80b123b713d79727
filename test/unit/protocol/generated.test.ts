import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

// Compiled to dist/test/unit/protocol/, four levels below the project root.
const root = fileURLToPath(new URL('../../../../', import.meta.url));
const generated = join(root, 'src/protocol/generated');
/** Everything the generator writes: the schema data, the types and the types' field table. */
const FILES = ['messages.ts', 'types.ts', 'fields.ts'];

test('the committed generated schemas match a fresh generation from the pinned kafka-clients jar', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gen-protocol-'));
  try {
    // As `npm run gen:protocol` runs it, from a clone alone (the jar comes from Maven Central once, then the cache).
    execFileSync(process.execPath, [join(root, 'scripts/gen-protocol.mjs'), join(dir, 'messages.ts')], { stdio: 'pipe' });
    for (const file of FILES) {
      assert.ok(
        readFileSync(join(dir, file)).equals(readFileSync(join(generated, file))),
        `src/protocol/generated/${file} is stale or edited by hand: run \`npm run gen:protocol\``,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
