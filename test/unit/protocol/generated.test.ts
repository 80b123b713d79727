import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

// Compiled to dist/test/unit/protocol/, four levels below the project root.
const root = fileURLToPath(new URL('../../../../', import.meta.url));
const definitions = join(root, '../shared/kafka-protocol/messages');
const committed = join(root, 'src/protocol/generated/messages.ts');

test(
  'the committed generated schemas match a fresh generation',
  {
    skip: existsSync(definitions) ? false : `Kafka message definitions not found at ${definitions}`,
  },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'gen-protocol-'));
    try {
      const fresh = join(dir, 'messages.ts');
      execFileSync(process.execPath, [join(root, 'scripts/gen-protocol.mjs'), definitions, fresh], { stdio: 'pipe' });
      assert.ok(
        readFileSync(fresh).equals(readFileSync(committed)),
        'src/protocol/generated/messages.ts is stale or edited by hand: run `npm run gen:protocol`',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
