import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

// The project's own lint rules (eslint.config.js, scripts/eslint/): each case lints a snippet as if it were written
// in the named file, with the project's configuration, and expects the rule to refuse it or let it through.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SQL_RULE = 'mailroom/sql-table-ref';

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({
    cwd: ROOT,
    ruleFilter: ({ ruleId }) => ruleId === SQL_RULE,
    overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
  });
});

async function messages(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`import { sql } from 'kysely';\n${code}\nexport {};\n`, { filePath: `${ROOT}/${file}` });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? 'fatal'}: ${m.message}`);
}

describe('raw sql names tables only through sql.table / sql.ref', () => {
  it.each([
    ['a qualified column', 'const e = sql<number>`folder_counts.total + ${1}`;'],
    ['a bare table name', 'const e = sql`message_fts`;'],
    ['a table in a sub-query', 'const e = sql`exists (select 1 from messages where id = ${"x"})`;'],
  ])('refuses %s', async (_, code) => {
    expect(await messages('src/modules/mail/example.store.ts', code)).toEqual([expect.stringContaining(SQL_RULE)]);
  });

  it.each([
    ['sql.ref', "const e = sql<number>`${sql.ref('folder_counts.total')} + ${1}`;"],
    ['sql.table', "const e = sql`${sql.table('message_fts')}`;"],
    ['a column alone', 'const e = sql<number>`unread_count + ${1}`;'],
    ['a quoted string that reads like a table', "const e = sql`'messages'`;"],
  ])('lets %s through', async (_, code) => {
    expect(await messages('src/modules/mail/example.store.ts', code)).toEqual([]);
  });

  it('lets migrations name tables (they run alone, before any write is deferred)', async () => {
    expect(await messages('src/db/migrations/20990101000000_example.ts', 'const e = sql`drop table message_fts`;')).toEqual([]);
  });
});
