// Lint with type information; warnings fail (`--max-warnings 0`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import { sqlTableRef } from './scripts/eslint/sql-table-ref.js';

// The "never" arrows of the design (transports → modules → db; lib below all): each folder's block lists every
// pattern that applies to it, since a later block setting the same rule replaces an earlier one for a file.
// Proved by test/import-arrows.test.ts; the exception in decision 223.
const never = {
  main: { group: ['**/main.js'], message: 'nothing imports main.ts (the entry point) but the CLI, lazily' },
  composition: {
    group: ['**/services.js'],
    message: 'only main.ts and the CLI compose the service (services.ts)',
  },
  transports: {
    group: ['**/transports/**'],
    message: 'a module never imports a transport: declare an interface in the module and let services.ts inject it',
  },
  // Everything in a module but its *.table.ts, which `tableValues` allows for types only.
  modules: {
    regex: '(^|/)modules/(?!.*\\.table\\.js$)',
    message: 'src/db never imports a feature module: the schema may take the row types of *.table.ts, type-only',
  },
  tableValues: {
    group: ['**/modules/*/*.table.js'],
    allowTypeImports: true,
    message: 'src/db takes only the row types of *.table.ts (import type)',
  },
  db: { group: ['**/db/**'], message: 'transports never touch the database: call a feature service' },
  repositories: { group: ['**/*.store.js', '**/jobs/queue.js'], message: 'transports never touch the database: call a feature service' },
  services: { group: ['**/*.service.js', '**/*.module.js'], message: 'a store never calls a service: the service calls it' },
  // Only a store (`*.store.ts`, and the queue, which owns `jobs`) types a handle over tables or uses the machinery;
  // everything else holds a `Work` (a handle naming no table) and calls stores.
  storeOnly: {
    group: ['**/db/database.js', '**/db/schema.js', '**/db/prepared.js', '**/db/write-coalescing.js', '**/db/pg-named-statements.js'],
    message: 'only a store touches tables: hold a `Work` (db/tables.js) and call the store that owns the table',
  },
  tablesOf: {
    group: ['**/db/tables.js'],
    importNames: ['tablesOf'],
    message: 'only a store views a handle over tables (tablesOf): call the store that owns the table',
  },
  // Another module's store reaches a module only as a type (`Pick<…>`), its instance handed over by services.ts.
  storeTypes: {
    group: ['../*/*.store.js'],
    allowTypeImports: true,
    message: "take another module's store as a type (Pick<…>) and let services.ts hand it over",
  },
  // A store types its handle over its own module's tables only: another module's table is that module's to name.
  otherTables: {
    group: ['../*/*.table.js', '../../modules/*/*.table.js', '../../jobs/*.table.js', '../modules/*/*.table.js'],
    message: "a store names only its own module's tables: ask the owner's store for an operation",
  },
  ours: { regex: '^\\.\\./', message: 'src/lib imports nothing of ours outside lib (only node: and packages)' },
  // prom-client stays behind src/lib/metrics.ts: code records through a `Metrics` that services.ts hands over.
  promClient: { group: ['prom-client'], message: 'record through the Metrics of src/lib/metrics.ts, handed over by services.ts' },
  sdkAlone: { regex: '^\\.\\./', message: 'src/sdk imports nothing of ours outside src/sdk: it can be copied into another project as it is' },
};
/** One flat-config block restricting `files` to the given arrows. */
function arrows(files, patterns, ignores = []) {
  return { files, ignores, rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] } };
}

export default tseslint.config(
  // src/sdk/openapi.d.ts is generated (npm run sdk) and checked against the live document by test/openapi.test.ts.
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', 'bin/', 'eslint.config.js', 'scripts/eslint/', 'src/sdk/openapi.d.ts'] },
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
    // The CLI client starts in a blink only while it loads none of the server: its code may take the
    // server's types (erased at build) but no value. The server and admin commands in src/cli load the server
    // with `await import()` inside their actions, which this rule does not see.
    files: ['src/cli/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/modules/**', '**/db/**', '**/transports/**', '**/jobs/**', '**/main.js', '**/services.js', '**/config/config.js', '**/lib/logger.js'],
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
  // Design arrows (see `never` above). src/cli has its own block above; main.ts is the composition's one importer.
  arrows(['src/**/*.ts'], [never.main, never.composition], ['src/cli/**', 'src/main.ts']),
  {
    // The same two arrows for `await import()`, which no-restricted-imports does not see (the CLI's lazy loads are allowed).
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**', 'src/main.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ImportExpression[source.value=/(^|\\/)(main|services)\\.js$/]',
          message: 'nothing but the CLI loads main.ts or the composition (services.ts), not even lazily',
        },
      ],
    },
  },
  arrows(['src/modules/**/*.ts', 'src/jobs/**/*.ts'], [never.main, never.composition, never.transports, never.storeOnly, never.tablesOf, never.storeTypes, never.promClient], ['**/*.store.ts', 'src/jobs/queue.ts']),
  // A thread's entry point (`*.worker.ts`) is the composition of its thread: it may make the stores it runs.
  arrows(['src/modules/**/*.worker.ts'], [never.main, never.composition, never.transports, never.storeOnly, never.tablesOf]),
  arrows(['src/modules/**/*.store.ts', 'src/jobs/queue.ts'], [never.main, never.composition, never.transports, never.services, never.otherTables, never.storeTypes, never.promClient]),
  arrows(['src/db/**/*.ts'], [never.main, never.composition, never.transports, never.modules, never.tableValues, never.promClient]),
  arrows(['src/lib/**/*.ts'], [never.ours]),
  // The SDK stands alone (it can be copied into another project): its own files and packages only.
  arrows(['src/sdk/**/*.ts'], [never.sdkAlone]),
  arrows(['src/transports/**/*.ts'], [never.main, never.composition, never.db, never.repositories, never.promClient]),
  {
    // Message content is attacker input: no pattern over it may backtrack super-linearly, in the app too.
    files: ['src/**/*.ts', 'web/src/**/*.{ts,tsx}'],
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': 'error',
      'regexp/no-super-linear-move': 'error',
    },
  },
  {
    // Raw `sql` text never names a table (scripts/eslint/sql-table-ref.js says why). Migrations run alone, before
    // any coalescing, and may.
    files: ['src/**/*.ts'],
    ignores: ['src/db/migrations/**'],
    plugins: { mailroom: { rules: { 'sql-table-ref': sqlTableRef } } },
    rules: { 'mailroom/sql-table-ref': 'error' },
  },
  {
    // The web app (web/src) runs in the browser: its globals, and the rules of React's hooks.
    files: ['web/src/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
    plugins: { 'react-hooks': reactHooks },
    rules: reactHooks.configs.recommended.rules,
  },
);
