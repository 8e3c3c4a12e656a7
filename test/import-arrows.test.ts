import { ESLint } from 'eslint';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

// The design's "never" arrows are lint rules (eslint.config.js): each case lints one import as if it were written
// in the named file, with the project's own configuration, and expects the rule to refuse it or let it through.
const RULE = '@typescript-eslint/no-restricted-imports';
/** The rule that catches `await import()`, which RULE does not see. */
const LAZY_RULE = 'no-restricted-syntax';
const ROOT = fileURLToPath(new URL('..', import.meta.url));

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({
    cwd: ROOT,
    // Only the arrows run, so no type information is needed: the snippets need not be part of the project.
    ruleFilter: ({ ruleId }) => ruleId === RULE || ruleId === LAZY_RULE,
    overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
  });
});

/** The messages of the arrow rule for `code` written in `file`. */
async function arrowMessages(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport {};\n`, { filePath: `${ROOT}/${file}` });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? 'fatal'}: ${m.message}`);
}

interface Case {
  arrow: string;
  file: string;
  code: string;
  /** The rule expected to refuse it (RULE unless said). */
  rule?: string;
}

const refused: Case[] = [
  { arrow: 'a module never imports a transport', file: 'src/modules/messages/inbound.service.ts', code: "import { createSmtpDeliverer } from '../../transports/smtp/outbound.client.js';" },
  { arrow: 'a module never imports a transport, not even a type', file: 'src/modules/webhooks/webhook.service.ts', code: "import type { buildApp } from '../../transports/http/app.js';" },
  { arrow: 'a thread entry point never imports a transport', file: 'src/modules/messages/analysis.worker.ts', code: "import { createInboundSmtpServer } from '../../transports/smtp/inbound.server.js';" },
  { arrow: 'src/db never imports a feature module', file: 'src/db/group-commit.ts', code: "import { createMessageService } from '../modules/messages/message.service.js';" },
  { arrow: 'src/db never imports a feature module, not even its types', file: 'src/db/schema.ts', code: "import type { MessageService } from '../modules/messages/message.service.js';" },
  { arrow: 'src/db takes no value from a *.table.ts', file: 'src/db/schema.ts', code: "import { MessageTable } from '../modules/mail/message.table.js';" },
  { arrow: 'src/db never imports a transport', file: 'src/db/migrator.ts', code: "import { buildApp } from '../transports/http/app.js';" },
  { arrow: 'src/lib imports nothing of ours', file: 'src/lib/clock.ts', code: "import { loadConfig } from '../config/config.js';" },
  { arrow: 'src/lib imports nothing of ours, not even a type', file: 'src/lib/errors.ts', code: "import type { Db } from '../db/database.js';" },
  { arrow: 'the SDK imports nothing of ours outside src/sdk, not even a type', file: 'src/sdk/index.ts', code: "import type { MessageView } from '../modules/messages/message.types.js';" },
  { arrow: 'a route never touches the database', file: 'src/transports/http/routes/messages.routes.ts', code: "import type { Db } from '../../../db/database.js';" },
  { arrow: 'a route never imports a store', file: 'src/transports/http/routes/lists.routes.ts', code: "import { createListStore } from '../../../modules/lists/list.store.js';" },
  { arrow: 'a transport never imports a store', file: 'src/transports/smtp/inbound.server.ts', code: "import { createMailStore } from '../../modules/mail/mail.store.js';" },
  { arrow: 'a store never imports a service', file: 'src/modules/lists/list.store.ts', code: "import type { ListService } from './list.service.js';" },
  { arrow: 'a store never imports a feature module', file: 'src/modules/tenancy/tenancy.store.ts', code: "import { createTenancyModule } from './tenancy.module.js';" },
  { arrow: 'a module never imports main.ts', file: 'src/modules/sending/dkim-sign.worker.ts', code: "import { createServices } from '../../main.js';" },
  { arrow: 'a thread entry point never imports the composition', file: 'src/modules/messages/analysis.worker.ts', code: "import { createServices } from '../../services.js';" },
  { arrow: 'src/jobs never imports main.ts', file: 'src/jobs/worker.ts', code: "import type { Services } from '../main.js';" },
  { arrow: 'a transport never imports main.ts', file: 'src/transports/http/app.ts', code: "import { startService } from '../../main.js';" },
  { arrow: 'a module never imports the composition', file: 'src/modules/messages/inbound.service.ts', code: "import { createServices } from '../../services.js';" },
  { arrow: 'a route never imports the composition', file: 'src/transports/http/routes/health.routes.ts', code: "import type { Services } from '../../../services.js';" },
  { arrow: 'the CLI loads no composition at start-up', file: 'src/cli/index.ts', code: "import { createServices } from '../services.js';" },
  { arrow: 'a module never loads main.ts lazily', file: 'src/modules/messages/inbound.service.ts', code: "await import('../../main.js');", rule: LAZY_RULE },
  { arrow: 'a transport never loads the composition lazily', file: 'src/transports/smtp/inbound.server.ts', code: "await import('../../services.js');", rule: LAZY_RULE },
  { arrow: 'a service never views a handle over tables', file: 'src/modules/sending/sending.service.ts', code: "import { tablesOf } from '../../db/tables.js';" },
  { arrow: 'a service never sees the whole schema', file: 'src/modules/messages/message.service.ts', code: "import type { Database } from '../../db/schema.js';" },
  { arrow: 'a service never uses the machinery', file: 'src/modules/webhooks/webhook.service.ts', code: "import { preparedQuery } from '../../db/prepared.js';" },
  { arrow: "a store never names another module's tables", file: 'src/modules/mail/outbound.store.ts', code: "import type { ListTables } from '../lists/list.table.js';" },
  { arrow: "a service takes another module's store as a type only", file: 'src/modules/sending/sending.service.ts', code: "import { createListStore } from '../lists/list.store.js';" },
  { arrow: "the queue never names another module's tables", file: 'src/jobs/queue.ts', code: "import type { MailTables } from '../modules/mail/mail.table.js';" },
  { arrow: 'a module records metrics through lib/metrics.ts, never prom-client', file: 'src/modules/sending/delivery.handler.ts', code: "import { Counter } from 'prom-client';" },
  { arrow: 'a transport records metrics through lib/metrics.ts, never prom-client', file: 'src/transports/http/app.ts', code: "import type { Registry } from 'prom-client';" },
  { arrow: 'the worker records metrics through lib/metrics.ts, never prom-client', file: 'src/jobs/worker.ts', code: "import { Counter } from 'prom-client';" },
];

const allowed: Case[] = [
  { arrow: 'the schema takes the row types of *.table.ts', file: 'src/db/schema.ts', code: "import type { MessageTable } from '../modules/mail/message.table.js';" },
  { arrow: 'a store uses the database', file: 'src/modules/lists/list.store.ts', code: "import { tablesOf, type Work } from '../../db/tables.js';" },
  { arrow: 'a service holds a Work (a handle naming no table)', file: 'src/modules/sending/sending.service.ts', code: "import type { Work } from '../../db/tables.js';" },
  { arrow: "a store names its own module's tables", file: 'src/modules/mail/outbound.store.ts', code: "import type { MailTables } from './mail.table.js';" },
  { arrow: 'a module uses lib', file: 'src/modules/lists/list.service.ts', code: "import { invalid } from '../../lib/errors.js';" },
  { arrow: 'the SDK uses its generated types and packages', file: 'src/sdk/index.ts', code: "import type { paths } from './openapi.js';\nimport createClient from 'openapi-fetch';" },
  { arrow: 'lib uses lib, node: and packages', file: 'src/lib/thread-pool.ts', code: "import type { Logger } from './logger.js';\nimport { join } from 'node:path';\nimport { Kysely } from 'kysely';" },
  { arrow: 'lib/metrics.ts wraps prom-client', file: 'src/lib/metrics.ts', code: "import { Registry } from 'prom-client';" },
  { arrow: 'a module takes the Metrics interface', file: 'src/modules/sending/delivery.handler.ts', code: "import type { Metrics } from '../../lib/metrics.js';" },
  { arrow: 'a route calls a service', file: 'src/transports/http/routes/lists.routes.ts', code: "import type { ListService } from '../../../modules/lists/list.service.js';" },
  { arrow: 'main.ts composes the service', file: 'src/main.ts', code: "import { createServices } from './services.js';" },
  { arrow: 'the CLI takes the service types', file: 'src/cli/admin.commands.ts', code: "import type { Services } from '../main.js';" },
  { arrow: 'a server command loads main.ts lazily', file: 'src/cli/index.ts', code: "await import('../main.js');" },
];

describe('lint enforces the arrows of the design', () => {
  it.each(refused)('refuses: $arrow', async ({ file, code, rule = RULE }) => {
    const messages = await arrowMessages(file, code);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.startsWith(`${rule}: `)).toBe(true);
  });

  it.each(allowed)('allows: $arrow', async ({ file, code }) => {
    expect(await arrowMessages(file, code)).toEqual([]);
  });
});
