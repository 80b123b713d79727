// Lint rules for the whole repository (`make lint`, run by `make test`): ESLint's and
// typescript-eslint's recommended sets, without type information so that it stays quick.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
);
