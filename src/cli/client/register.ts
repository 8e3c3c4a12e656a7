import type { Command } from 'commander';
import { registerAppPasswordCommands } from './app-passwords.commands.js';
import { registerAuditCommands } from './audit.commands.js';
import { registerEventCommands } from './events.commands.js';
import { registerDomainCommands } from './domains.commands.js';
import { registerDraftCommands } from './drafts.commands.js';
import { registerKeyCommands } from './keys.commands.js';
import { registerListCommands } from './lists.commands.js';
import { registerMailboxCommands } from './mailboxes.commands.js';
import { registerMemberCommands } from './members.commands.js';
import { registerMessageCommands } from './messages.commands.js';
import { registerSendingCommands } from './sending.commands.js';
import { registerSandboxCommands } from './sandbox.commands.js';
import { registerSessionCommands } from './session.commands.js';
import { registerSuppressionCommands } from './suppressions.commands.js';
import { registerThreadCommands } from './threads.commands.js';
import { registerTokenCommands } from './tokens.commands.js';
import { registerWebhookCommands } from './webhooks.commands.js';

/** The client of the session API: every command talks to a server over HTTP, never to the database. */
export function registerClientCommands(program: Command): void {
  program.commandsGroup('Client commands (session API; start with mailroom login):');
  registerSessionCommands(program);
  registerMailboxCommands(program);
  registerMessageCommands(program);
  registerThreadCommands(program);
  registerDraftCommands(program);
  registerSendingCommands(program);
  registerListCommands(program);
  registerSuppressionCommands(program);
  registerDomainCommands(program);
  registerTokenCommands(program);
  registerWebhookCommands(program);
  registerKeyCommands(program);
  registerAppPasswordCommands(program);
  registerMemberCommands(program);
  registerAuditCommands(program);
  registerEventCommands(program);
  registerSandboxCommands(program);
}
