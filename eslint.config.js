// Lint with type information; warnings fail (`--max-warnings 0`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', 'bin/', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      'no-console': 'off',
    },
  },
  {
    // The CLI client starts in a blink only while it loads none of the server (issue 22): its code may take the
    // server's types (erased at build) but no value. The server and admin commands in src/cli load the server
    // with `await import()` inside their actions, which this rule does not see.
    files: ['src/cli/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/modules/**', '**/db/**', '**/transports/**', '**/jobs/**', '**/main.js', '**/config/config.js', '**/lib/logger.js'],
              allowTypeImports: true,
              message: 'the CLI loads no server module at start-up: import types only, or `await import()` inside a server command',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/cli/client/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "ImportExpression[source.value=/\\/(modules|db|transports|jobs|main|config)\\b/]",
          message: 'client commands talk to a server over HTTP and never load server modules',
        },
      ],
    },
  },
  {
    // Message content is attacker input: no pattern over it may backtrack super-linearly (issue 22).
    files: ['src/**/*.ts'],
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': 'error',
      'regexp/no-super-linear-move': 'error',
    },
  },
);
