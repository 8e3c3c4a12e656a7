// A lint rule of this project: a `sql` template must not name a table in its text.
//
// Write coalescing (src/db/write-coalescing.ts) learns which tables a statement touches from Kysely's operation
// tree; a table named inside a `sql` fragment's text is invisible to it, so a deferred write to that table could be
// sent after the statement that reads it. `sql.table('t')` and `sql.ref('t.column')` put the name in the tree.
// The table names are read from the migrations, so a new table is covered without touching this rule.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const MIGRATIONS = new URL('../../src/db/migrations/', import.meta.url);

function tableNames() {
  const names = new Set();
  const dir = MIGRATIONS.pathname;
  for (const file of readdirSync(dir)) {
    const text = readFileSync(join(dir, file), 'utf8');
    for (const m of text.matchAll(/createTable\(\s*'([a-z_][a-z0-9_]*)'/g)) names.add(m[1]);
    for (const m of text.matchAll(/create (?:virtual )?table (?:if not exists )?([a-z_][a-z0-9_]*)/gi)) names.add(m[1].toLowerCase());
  }
  return names;
}

/** The tag is `sql` or `sql<T>` (Kysely's template tag). */
function isSqlTag(node) {
  return node.tag.type === 'Identifier' && node.tag.name === 'sql';
}

export const sqlTableRef = {
  meta: {
    type: 'problem',
    docs: { description: 'a `sql` template names tables through sql.table / sql.ref, never in its text' },
    schema: [],
    messages: {
      named: "`sql` text names the table '{{table}}': write ${sql.table('{{table}}')} or ${sql.ref('{{table}}.column')} so write coalescing sees it",
    },
  },
  create(context) {
    const tables = tableNames();
    return {
      TaggedTemplateExpression(node) {
        if (!isSqlTag(node)) return;
        for (const quasi of node.quasi.quasis) {
          // Words outside quoted strings and identifiers: a table name alone or before a dot.
          const text = (quasi.value.cooked ?? quasi.value.raw).replace(/'[^']*'/g, "''");
          for (const m of text.matchAll(/(?<![\w."])([a-z_][a-z0-9_]*)(?![\w"])/gi)) {
            const word = m[1].toLowerCase();
            if (tables.has(word)) {
              context.report({ node: quasi, messageId: 'named', data: { table: word } });
              return;
            }
          }
        }
      },
    };
  },
};
