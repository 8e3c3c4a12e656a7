import { afterCommit } from '../../src/db/commit-hooks.js';
import { afterAll, beforeAll, onTestFinished } from 'vitest';
import { createWorker, type Worker } from '../../src/jobs/worker.js';
import { createLogger } from '../../src/lib/logger.js';
import type { Services } from '../../src/main.js';
import type { Zone } from './dns-server.js';
import { bearer, createTenant, login, memberSession, session, type HarnessServiceOptions, type Tenant } from './harness.js';
import { startMailHarness, type MailHarness } from './mail.js';
import { startSmtpPeer, type PeerOptions, type SmtpPeer } from './smtp-peer.js';

/** Anything a world (or a test) starts and must stop again. */
export interface Closeable {
  close(): unknown;
}

export interface WorldOptions {
  /** Settings over the world's own (MX port, DNS server); a function is given the peer (to name it as a relay). */
  env?: Record<string, string> | ((peer: SmtpPeer | undefined) => Record<string, string>);
  /** As `mailroom serve --sandbox`. */
  sandbox?: boolean;
  /** The SMTP peer outbound mail is delivered to (MAILROOM_MX_PORT); `false`: no peer. */
  peer?: PeerOptions | false;
  /**
   * Domains whose mail goes to the peer: each gets an MX `mx1.<domain>` whose A record is 127.0.0.1 (the peer's
   * address). Default: `peer.test`.
   */
  mx?: string[];
  /** Domains that have no MX but an A record of 127.0.0.1 (delivery uses the implicit MX). */
  a?: string[];
  /** Start a delivery worker with the world (default true); a test may stop and start it again. */
  worker?: boolean;
  /** Options of `createServices` (read when the world starts, so an earlier `beforeAll` may fill the object in). */
  services?: HarnessServiceOptions;
}

/** A tenant made in a world: a workspace, its owner and an API key. */
export type WorldTenant = Tenant;

/** An event as webhooks deliver it. */
export interface WorldEvent {
  event_id: string;
  event_type: string;
  workspace_id: string;
  created_at: string;
  data: Record<string, unknown>;
}

/** Events as the events service emits them, recorded by a subscriber (see `recordEvents`). */
export interface RecordedEvents {
  /** Parsed, oldest first, of one type (or all). */
  events(type?: string): WorldEvent[];
  /** The exact JSON each carried, as webhooks and streams deliver it. */
  payloads(type?: string): string[];
}

/**
 * Record every event the service emits from now on, through the events service's own subscription (not its table).
 * It records an event once its transaction has committed (an emit that is rolled back is never recorded), before
 * the writer hears of the commit. Events stored without calling subscribers (a webhook's test event) are not recorded.
 */
export function recordEvents(services: Pick<Services, 'events'>): RecordedEvents {
  const seen: Array<{ type: string; payload: string; event: WorldEvent }> = [];
  services.events.subscribe(async (trx, event) => {
    await afterCommit(trx, () => seen.push({ type: event.type, payload: event.payload, event: JSON.parse(event.payload) as WorldEvent }));
  });
  const of = (type?: string) => seen.filter((e) => type === undefined || e.type === type);
  return { events: (type) => of(type).map((e) => e.event), payloads: (type) => of(type).map((e) => e.payload) };
}

/** A message as its workspace's API key sees it (GET /messages/{id}); outbound ones carry their delivery. */
export interface MessageView {
  message_id: string;
  folder: string;
  direction: string;
  subject: string | null;
  status?: string;
  recipients?: Array<{ address: string; status: string; response: string | null; mx?: string | null }>;
  attempts?: Array<{ at: string; mx: string | null; recipients: string[]; outcome: string; response: string }>;
  last_error?: string | null;
  [field: string]: unknown;
}

/**
 * One service with everything a mail test talks to: its inbound SMTP listener and HTTP app (the harness), a loopback
 * DNS server, an SMTP peer behind the MX records and a delivery worker. Made once per describe block (the hooks
 * `mailWorld` registers), shared by its tests, and torn down after them; its parts are readable once the block's
 * first `beforeAll` has run.
 */
export interface MailWorld {
  readonly h: MailHarness;
  readonly peer: SmtpPeer;
  /** The running delivery worker; throws when the world has none running. */
  readonly worker: Worker;
  /** A workspace with an owner and API key, made through the admin service; `mailboxes` are created through the API. */
  tenant(name?: string, mailboxes?: string[]): Promise<WorldTenant>;
  /** Create a mailbox through the API (POST /mailboxes), failing unless it was created. */
  mailbox(tenant: WorldTenant, address: string): Promise<void>;
  /** A user with the role in the tenant's workspace, logged in: the session token. */
  member(tenant: WorldTenant, role: 'owner' | 'admin' | 'member'): Promise<string>;
  /** Point a domain's MX at the peer (`mx1.<domain>` → 127.0.0.1). */
  mx(domain: string): void;
  /** Publish (or replace) DNS records. */
  dns(name: string, zone: Zone): void;
  startWorker(pollMs?: number): Worker;
  stopWorker(): Promise<void>;
  /** Close `thing` with the world, before the harness (a receiver, a second peer, a raw connection). */
  own<T extends Closeable>(thing: T): T;
  /**
   * Events the service emitted since the world was made, oldest first, of one type (or all). Recorded by a subscriber
   * of the events service, as they are written: an emit whose transaction then rolled back is here too.
   */
  events(type?: string): WorldEvent[];
  /** The message as the tenant's API key sees it; undefined when that answers 404. */
  message(tenant: WorldTenant, id: string): Promise<MessageView | undefined>;
  /** Messages held by the workspaces of the world's tenants (GET /stats of each). */
  messageCount(): Promise<number>;
  /** Messages in the tenant's sent list (GET /sent). */
  sentCount(tenant: WorldTenant): Promise<number>;
  /** The whole of the tenant's sent list, newest first (GET /sent, page by page). */
  sentMessages(tenant: WorldTenant): Promise<MessageView[]>;
  /** Whether the address is on the tenant's suppression list (GET /app/api/suppressions/{address}). */
  suppressed(tenant: WorldTenant, address: string): Promise<boolean>;
  /** A session of the tenant's owner (logged in once). */
  ownerSession(tenant: WorldTenant): Promise<string>;
  /** A new app password of the owner's for one of the tenant's mailboxes (POST /app/api/app-passwords). */
  appPassword(tenant: WorldTenant, mailbox: string, name?: string): Promise<{ id: string; password: string }>;
}

/** Close `thing` when the current test finishes, passed or failed. Call it inside a test. */
export function closeAfterTest<T extends Closeable>(thing: T): T {
  onTestFinished(async () => {
    await thing.close();
  });
  return thing;
}

function part<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`the mail world has no ${what} (yet): read it inside a test or a later beforeAll`);
  return value;
}

/**
 * Make a world for the enclosing describe block (or file): call it where `describe`'s body runs, not inside a hook.
 * Teardown is registered here, so no test writes its own.
 */
export function mailWorld(options: WorldOptions = {}): MailWorld {
  let h: MailHarness | undefined;
  let peer: SmtpPeer | undefined;
  let worker: Worker | undefined;
  const owned: Closeable[] = [];
  const tenants: WorldTenant[] = [];
  const sessions = new Map<string, string>();
  let recorded: RecordedEvents | undefined;
  const get = async <T>(url: string, headers: Record<string, string>): Promise<{ status: number; body: T }> => {
    const res = await world.h.app.inject({ method: 'GET', url, headers });
    return { status: res.statusCode, body: res.json<T>() };
  };
  const ok = <T>(url: string, answer: { status: number; body: T }): T => {
    if (answer.status !== 200) throw new Error(`GET ${url}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };

  const world: MailWorld = {
    get h() {
      return part(h, 'harness');
    },
    get peer() {
      return part(peer, 'SMTP peer');
    },
    get worker() {
      return part(worker, 'running worker');
    },
    async tenant(name = 'Acme', mailboxes = []) {
      const tenant = await createTenant(world.h, name);
      tenants.push(tenant);
      for (const address of mailboxes) await world.mailbox(tenant, address);
      return tenant;
    },
    async mailbox(tenant, address) {
      const res = await world.h.app.inject({ method: 'POST', url: `/mailboxes?address=${encodeURIComponent(address)}`, headers: bearer(tenant.apiKey) });
      if (res.statusCode !== 201) throw new Error(`mailbox ${address} was not created: ${res.statusCode} ${res.body}`);
    },
    member: async (tenant, role) => (await memberSession(world.h, tenant.workspaceId, role)).token,
    mx(domain) {
      world.h.dns.set(domain, { MX: [{ exchange: `mx1.${domain}`, priority: 10 }] });
      world.h.dns.set(`mx1.${domain}`, { A: ['127.0.0.1'] });
    },
    dns: (name, zone) => world.h.dns.set(name, zone),
    startWorker(pollMs = 20) {
      if (worker) throw new Error('the world already has a running worker');
      const harness = world.h;
      worker = createWorker(harness.services.handlers, { queue: harness.services.queue, logger: createLogger('silent'), leaseMs: harness.config.leaseMs, pollMs });
      worker.start();
      return worker;
    },
    async stopWorker() {
      const running = worker;
      worker = undefined;
      await running?.stop(2000);
    },
    own(thing) {
      owned.push(thing);
      return thing;
    },
    events: (type) => part(recorded, 'event recorder').events(type),
    async message(tenant, id) {
      const answer = await get<MessageView>(`/messages/${encodeURIComponent(id)}`, bearer(tenant.apiKey));
      return answer.status === 404 ? undefined : ok(`/messages/${id}`, answer);
    },
    async messageCount() {
      let total = 0;
      for (const tenant of tenants) total += ok('/stats', await get<{ messages: number }>('/stats', bearer(tenant.apiKey))).messages;
      return total;
    },
    async sentMessages(tenant) {
      const all: MessageView[] = [];
      for (;;) {
        const url = `/sent?limit=500&offset=${all.length}`;
        const page = ok(url, await get<{ messages: MessageView[]; total: number }>(url, bearer(tenant.apiKey)));
        all.push(...page.messages);
        if (page.messages.length === 0 || all.length >= page.total) return all;
      }
    },
    sentCount: async (tenant) => ok('/sent', await get<{ total: number }>('/sent?limit=1', bearer(tenant.apiKey))).total,
    async suppressed(tenant, address) {
      const url = `/app/api/suppressions/${encodeURIComponent(address)}`;
      const answer = await get<unknown>(url, session(await world.ownerSession(tenant)));
      if (answer.status === 404) return false;
      ok(url, answer);
      return true;
    },
    async ownerSession(tenant) {
      let token = sessions.get(tenant.workspaceId);
      if (token === undefined) {
        token = await login(world.h, tenant.ownerEmail, tenant.password);
        sessions.set(tenant.workspaceId, token);
      }
      return token;
    },
    async appPassword(tenant, mailbox, name = 'mail client') {
      const res = await world.h.app.inject({ method: 'POST', url: '/app/api/app-passwords', headers: session(await world.ownerSession(tenant)), payload: { name, mailbox } });
      if (res.statusCode !== 201) throw new Error(`app password for ${mailbox}: ${res.statusCode} ${res.body}`);
      const body = res.json<{ app_password_id: string; password: string }>();
      return { id: body.app_password_id, password: body.password };
    },
  };

  beforeAll(async () => {
    if (options.peer !== false) peer = await startSmtpPeer(options.peer ?? {});
    const own = typeof options.env === 'function' ? options.env(peer) : options.env;
    const env = peer ? { MAILROOM_MX_PORT: String(peer.port), ...own } : { ...own };
    h = await startMailHarness(env, { sandbox: options.sandbox === true, ...(options.services ? { services: options.services } : {}) });
    recorded = recordEvents(h.services);
    for (const domain of options.mx ?? ['peer.test']) world.mx(domain);
    for (const domain of options.a ?? []) world.dns(domain, { A: ['127.0.0.1'] });
    if (options.worker !== false) world.startWorker();
  });

  // Registered before any hook of the test's own, so it runs after them (after-hooks run in reverse order).
  afterAll(async () => {
    await world.stopWorker();
    for (const thing of owned.splice(0).reverse()) await thing.close();
    await h?.close();
    await peer?.close();
  });

  return world;
}
