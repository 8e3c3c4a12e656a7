import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { createSandboxCatchAllService, type CatchAllDeps, type SandboxCatchAllService } from './sandbox-catch-all.service.js';
import { createSandboxDnsService, type SandboxDnsService } from './sandbox-dns.service.js';
import { createSandboxOutboxService, type SandboxOutboxService } from './sandbox-outbox.service.js';
import type { SandboxStore } from './sandbox.store.js';

export { createSandboxCapture, type SandboxCapture } from './sandbox-outbox.service.js';

/**
 * Sandbox mode (`mailroom serve --sandbox`): the records its DNS server answers, the outbound mail it captured, and
 * catch-all mailboxes. services.ts builds it only in sandbox mode; nothing else of the service knows it exists
 * beyond the interfaces it fills (a resolver's server, the delivery worker's deliverer and routes, a catch-all).
 */
/** Webhook receivers the sandbox allows besides public ones: loopback, IPv4 and IPv6, and nothing else. */
export const SANDBOX_WEBHOOK_CIDRS: readonly string[] = ['127.0.0.0/8', '::1/128'];

export interface SandboxModule {
  dns: SandboxDnsService;
  outbox: SandboxOutboxService;
  catchAlls: SandboxCatchAllService;
}

export function createSandboxModule(deps: { work: Work; store: SandboxStore; mailboxes: CatchAllDeps['mailboxes']; clock: Clock }): SandboxModule {
  return { dns: createSandboxDnsService(deps), outbox: createSandboxOutboxService(deps), catchAlls: createSandboxCatchAllService(deps) };
}
