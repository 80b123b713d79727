// Lint rules for the whole repository (`make lint`, run by `make test`): ESLint's and
// typescript-eslint's recommended sets, without type information so that it stays quick.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

// The layers of src/ (docs/architecture.md, "Which folder may import which"): each zone names a
// folder (target) and what it may not import (from). The compaction worker (src/engine) and the
// main thread meet only in src/engine/api.
const MAIN_THREAD = ['./src/proxy', './src/compaction', './src/ops', './src/tables', './src/config', './src/inject', './src/cli'];
const ENGINE_INSIDE = { from: './src/engine', except: ['./api'] };
const zones = [
  { target: './src/common', from: './src', except: ['./common'], message: 'common/ is the bottom layer: it imports nothing of kcompact.' },
  { target: './src/protocol', from: './src', except: ['./common', './protocol'], message: 'protocol/ imports only common/.' },
  {
    target: './src/upstream',
    from: ['./src/proxy', './src/compaction', './src/engine', './src/ops', './src/tables', './src/config', './src/cli'],
    message: 'upstream/ is below the proxy and the engine.',
  },
  {
    target: './src/engine/api',
    from: './src/engine',
    except: ['./api'],
    message: "engine/api/ is the contract between the threads: it may not reach into the engine's internals.",
  },
  {
    target: './src/engine',
    from: MAIN_THREAD,
    message: 'The compaction worker may not import the main thread (the proxy, the filters, ops, settings, the CLI).',
  },
  {
    target: './src/proxy',
    from: ['./src/compaction', './src/ops', './src/tables', './src/config', './src/cli'],
    message: 'proxy/ knows no filter of compaction, no ops, no table API and no settings.',
  },
  ...['./src/proxy', './src/compaction', './src/ops', './src/tables', './src/config', './src/inject'].map((target) => ({
    target,
    ...ENGINE_INSIDE,
    message: 'The main thread reaches the compaction engine only through src/engine/api.',
  })),
  {
    target: './src/compaction',
    from: ['./src/ops', './src/tables', './src/config', './src/cli'],
    message: 'compaction/ is below ops, the table API, settings and the CLI.',
  },
  { target: './src/ops', from: ['./src/tables', './src/config', './src/cli'], message: 'ops/ is below the table API, settings and the CLI.' },
  {
    target: './src/tables',
    from: ['./src/proxy', './src/compaction', './src/config', './src/cli'],
    message: 'tables/ reaches the index through engine/api and the store through upstream/; it knows no proxy, no compaction filter, no settings.',
  },
  { target: './src/config', from: ['./src/inject', './src/cli'], message: 'config/ is below inject/ and the CLI.' },
  ...['./src/upstream', './src/proxy', './src/compaction', './src/ops', './src/tables'].map((target) => ({
    target,
    from: './src/inject',
    message: 'inject/ (the manifests of `kcompact inject`) sits just below the CLI: only cli/ imports it.',
  })),
  { target: './src/inject', from: './src/cli', message: 'inject/ is below the CLI.' },
];

export default tseslint.config(
  { ignores: ['dist/**', 'dist-*/**', 'node_modules/**', 'src/protocol/generated/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  // Plain Node scripts (the protocol generator, this file): TypeScript's checks do not cover them.
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly' } } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // prom-client calls a metric's collect() with the metric as `this`: the owner is reached by another name.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['meter', 'metrics'] }],
      // A variable a closure reads before it is assigned (a server set up later) cannot be const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // SQLite is the store module's (docs/architecture.md): the rest of the engine asks PartitionStore
    // for operations. config-cache.ts is the main thread's own cache of topic configs, another file.
    files: ['src/**/*.ts'],
    ignores: ['src/engine/store/**', 'src/compaction/config/config-cache.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'better-sqlite3', message: 'SQL lives in src/engine/store/: add an operation to PartitionStore (or TopicIndex) instead.' }] },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // import-x reads the imported files itself, with TypeScript's parser, to follow circles.
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver': undefined,
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones }],
      'import-x/no-cycle': 'error',
    },
  },
);
