import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { createWorker, type Worker } from '../src/jobs/worker.js';
import type { ClaimedJob } from '../src/jobs/queue.js';
import { createLogger } from '../src/lib/logger.js';
import { createServices, type Services } from '../src/main.js';
import { rfc5322Date } from '../src/modules/sending/schedule.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, type Tenant } from './helpers/harness.js';
import { cliUser, listen } from './helpers/cli-client.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { startSmtpPeer, type ReceivedMail, type SmtpPeer } from './helpers/smtp-peer.js';
import { messageOfReturnPath } from './helpers/reports.js';
import { recordEvents, type RecordedEvents } from './helpers/world.js';

interface Queued {
  message_id: string;
  status: string;
  send_at?: string;
}
interface SentView {
  message_id: string;
  status: string;
  send_at?: string;
  date: string | null;
  recipients: Array<{ address: string; status: string }>;
}

const NEWS = 'newsletter@mailroom.localhost';
const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * A message sent with `send_at` is stored in sent at once as `scheduled` and delivered to a real
 * SMTP peer when the (manual) clock reaches its time, not before; it can be cancelled (never delivered) or
 * rescheduled while it waits, and a worker started anew on the same database delivers it at its time.
 */
describe(`scheduled send (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let peer: SmtpPeer;
  let worker: Worker;
  let acme: Tenant;
  let other: Tenant;
  let token: string;
  let recorded: RecordedEvents;

  const startWorker = (services: Services) => {
    const w = createWorker(services.handlers, { queue: services.queue, logger: createLogger('silent'), leaseMs: h.config.leaseMs, pollMs: 20 });
    w.start();
    return w;
  };

  beforeAll(async () => {
    peer = await startSmtpPeer();
    h = await startMailHarness({ MAILROOM_MX_PORT: String(peer.port) });
    recorded = recordEvents(h.services);
    h.dns.set('peer.test', { MX: [{ exchange: 'mx1.peer.test', priority: 10 }] });
    h.dns.set('mx1.peer.test', { A: ['127.0.0.1'] });
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    token = await login(h, acme.ownerEmail, acme.password);
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${NEWS}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    worker = startWorker(h.services);
  });
  afterAll(async () => {
    await worker.stop(2000);
    await h.close();
    await peer.close();
  });

  const isoIn = (ms: number) => new Date(h.clock.now() + ms).toISOString();
  const copiesOf = (id: string): ReceivedMail[] => peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === id);
  const dateHeader = (mail: ReceivedMail) => /^Date: (.*)\r$/m.exec(mail.raw.toString('latin1').split('\r\n\r\n')[0]! + '\r')?.[1];
  const post = (url: string, payload?: Record<string, unknown>, headers: Record<string, string> = bearer(acme.apiKey)) =>
    h.app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload }) });

  async function schedule(sendAt: string | undefined, to = 'later@peer.test'): Promise<Queued> {
    const res = await post('/send', { from_mailbox: NEWS, to, subject: 'Later', body: 'Scheduled.', ...(sendAt === undefined ? {} : { send_at: sendAt }) });
    expect(res.statusCode, res.body).toBe(202);
    return res.json<Queued>();
  }
  async function sentView(id: string, headers: Record<string, string> = bearer(acme.apiKey), url = '/sent'): Promise<SentView> {
    const res = await h.app.inject({ method: 'GET', url, headers });
    expect(res.statusCode, res.body).toBe(200);
    const item = res.json<{ messages: SentView[] }>().messages.find((m) => m.message_id === id);
    if (!item) throw new Error(`${id} is not in ${url}`);
    return item;
  }
  async function delivered(id: string): Promise<ReceivedMail> {
    await expect.poll(() => copiesOf(id).length, { timeout: 10_000 }).toBe(1);
    await expect.poll(async () => (await sentView(id)).status, { timeout: 10_000 }).toBe('accepted');
    return copiesOf(id)[0]!;
  }
  /**
   * A barrier instead of a wait: a message sent now is claimed by the worker's next poll at the current clock, so
   * once it is delivered the worker has looked for due jobs at least once since the clock was last moved.
   */
  async function workerCaughtUp(): Promise<void> {
    await delivered((await schedule(undefined, 'barrier@peer.test')).message_id);
  }
  /** The message's delivery job, if it has one. */
  const jobOf = async (id: string) =>
    (await h.services.queue.inspect<{ message_id?: string }>(asWork(h.services.database.db), { queue: 'delivery' })).find((j) => j.payload.message_id === id);
  /** The committed events of a type about one message. */
  const eventsOf = (type: string, id: string) => recorded.events(type).filter((e) => e.data.message_id === id);

  it('is stored as scheduled, not delivered before send_at, delivered after it, dated with it', async () => {
    const sendAt = h.clock.now() + 10 * MINUTE;
    const queued = await schedule(new Date(sendAt).toISOString().replace('Z', '+00:00'));
    expect(queued).toEqual({ message_id: expect.stringMatching(/^msg_/) as unknown, status: 'scheduled', send_at: new Date(sendAt).toISOString() });
    const id = queued.message_id;

    // Every view says scheduled with the send_at, on both surfaces; message.sent said so too.
    expect(await sentView(id)).toMatchObject({ status: 'scheduled', send_at: queued.send_at, date: queued.send_at, recipients: [{ address: 'later@peer.test', status: 'pending' }] });
    expect(await sentView(id, session(token), '/app/api/sent')).toMatchObject({ status: 'scheduled', send_at: queued.send_at });
    const single = await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(acme.apiKey) });
    expect(single.json()).toMatchObject({ status: 'scheduled', send_at: queued.send_at });
    expect(eventsOf('message.sent', id)).toEqual([expect.objectContaining({ data: expect.objectContaining({ status: 'scheduled', send_at: queued.send_at }) as unknown })]);
    expect((await jobOf(id))?.runAt).toBe(sendAt);

    h.clock.set(sendAt - 1);
    await workerCaughtUp();
    expect(copiesOf(id)).toHaveLength(0);
    expect((await sentView(id)).status).toBe('scheduled');

    h.clock.set(sendAt);
    const mail = await delivered(id);
    expect(dateHeader(mail)).toBe(rfc5322Date(sendAt));
    expect(await sentView(id)).toMatchObject({ status: 'accepted', send_at: queued.send_at, recipients: [{ status: 'accepted' }] });
  });

  it('a send_at already past (or now) sends at once; one more than 30 days ahead or not a date-time is a 400 naming send_at', async () => {
    const past = await schedule(isoIn(-MINUTE));
    expect(past).toEqual({ message_id: past.message_id, status: 'queued' });
    await delivered(past.message_id);
    expect((await sentView(past.message_id)).send_at).toBeUndefined();

    for (const sendAt of [isoIn(30 * DAY + MINUTE), 'tomorrow', '2026-11-21T12:00:00', '2026-02-30T12:00:00Z', 42]) {
      const res = await post('/send', { from_mailbox: NEWS, to: 'x@peer.test', subject: 's', body: 'b', send_at: sendAt });
      expect(errorOf(res), String(sendAt)).toMatchObject({ status: 400, error: 'invalid_request', detail: expect.stringContaining('send_at') as unknown });
    }
    const tomorrow = await post('/send', { from_mailbox: NEWS, to: 'x@peer.test', subject: 's', body: 'b', send_at: 'tomorrow' });
    expect(errorOf(tomorrow).detail).toBe('body.send_at must match format "date-time"');
    // Exactly 30 days ahead is allowed.
    expect((await schedule(isoIn(30 * DAY))).status).toBe('scheduled');
  });

  it('cancel: never delivered, cancelled, its job gone, message.cancelled emitted; cancelling again is a 409', async () => {
    const sendAt = h.clock.now() + 5 * MINUTE;
    const { message_id: id } = await schedule(new Date(sendAt).toISOString());
    expect(errorOf(await post(`/messages/${id}/cancel`, undefined, bearer(other.apiKey)))).toMatchObject({ status: 404, error: 'message_not_found' });
    expect(errorOf(await post('/messages/msg_00000000000000000000000000/cancel'))).toMatchObject({ status: 404, error: 'message_not_found' });

    const res = await post(`/messages/${id}/cancel`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ message_id: id, status: 'cancelled', send_at: new Date(sendAt).toISOString() });
    expect(await jobOf(id)).toBeUndefined();
    expect(eventsOf('message.cancelled', id)).toEqual([expect.objectContaining({ data: expect.objectContaining({ status: 'cancelled' }) as unknown })]);

    h.clock.set(sendAt + MINUTE);
    await workerCaughtUp();
    expect(copiesOf(id)).toHaveLength(0);
    expect((await sentView(id)).status).toBe('cancelled');

    expect(errorOf(await post(`/messages/${id}/cancel`))).toMatchObject({ status: 409, error: 'message_not_scheduled' });
    expect(errorOf(await post(`/messages/${id}/reschedule`, { send_at: isoIn(MINUTE) }))).toMatchObject({ status: 409, error: 'message_not_scheduled' });
  });

  it('the session surface cancels too; a message already delivered is a 409', async () => {
    const { message_id: id } = await schedule(isoIn(MINUTE));
    const res = await post(`/app/api/messages/${id}/cancel`, undefined, session(token));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'cancelled' });

    const now = await schedule(undefined);
    await delivered(now.message_id);
    expect(errorOf(await post(`/app/api/messages/${now.message_id}/cancel`, undefined, session(token)))).toMatchObject({ status: 409, error: 'message_not_scheduled', detail: expect.stringContaining('is accepted') as unknown });
  });

  it('reschedule to later: not delivered at the first time, delivered at the new one, dated with it', async () => {
    const first = h.clock.now() + 5 * MINUTE;
    const later = first + 60 * MINUTE;
    const { message_id: id } = await schedule(new Date(first).toISOString());
    const res = await post(`/messages/${id}/reschedule`, { send_at: new Date(later).toISOString() });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ message_id: id, status: 'scheduled', send_at: new Date(later).toISOString(), date: new Date(later).toISOString() });
    expect((await jobOf(id))?.runAt).toBe(later);

    h.clock.set(first + MINUTE);
    await workerCaughtUp();
    expect(copiesOf(id)).toHaveLength(0);
    h.clock.set(later);
    expect(dateHeader(await delivered(id))).toBe(rfc5322Date(later));
  });

  it('reschedule to earlier (session surface): delivered at the new time; a bad send_at is a 400', async () => {
    const first = h.clock.now() + 60 * MINUTE;
    const earlier = h.clock.now() + 5 * MINUTE;
    const { message_id: id } = await schedule(new Date(first).toISOString());
    expect(errorOf(await post(`/app/api/messages/${id}/reschedule`, { send_at: isoIn(31 * DAY) }, session(token)))).toMatchObject({ status: 400, detail: expect.stringContaining('send_at') as unknown });
    expect(errorOf(await post(`/app/api/messages/${id}/reschedule`, {}, session(token)))).toMatchObject({ status: 400, detail: expect.stringContaining('send_at') as unknown });
    const res = await post(`/app/api/messages/${id}/reschedule`, { send_at: new Date(earlier).toISOString() }, session(token));
    expect(res.statusCode, res.body).toBe(200);
    h.clock.set(earlier);
    expect(dateHeader(await delivered(id))).toBe(rfc5322Date(earlier));
  });

  it('a draft sent with send_at is scheduled, the draft gone, and delivered at its time', async () => {
    const created = await h.app.inject({ method: 'POST', url: '/app/api/drafts', headers: session(token), payload: { mailbox: NEWS, to: 'draft@peer.test', subject: 'From a draft', body: 'Later.' } });
    const draftId = created.json<{ draft_id: string }>().draft_id;
    const bad = await post(`/app/api/drafts/${draftId}/send`, { send_at: 'soon' }, session(token));
    expect(errorOf(bad)).toMatchObject({ status: 400, detail: expect.stringContaining('send_at') as unknown });
    const sendAt = h.clock.now() + 5 * MINUTE;
    const res = await post(`/app/api/drafts/${draftId}/send`, { send_at: new Date(sendAt).toISOString() }, session(token));
    expect(res.statusCode, res.body).toBe(202);
    const queued = res.json<Queued>();
    expect(queued).toMatchObject({ status: 'scheduled', send_at: new Date(sendAt).toISOString() });
    expect((await h.app.inject({ method: 'GET', url: `/app/api/drafts/${draftId}`, headers: session(token) })).statusCode).toBe(404);
    h.clock.set(sendAt);
    await delivered(queued.message_id);
  });

  it('a cancel and a worker that claimed the job never both win', async () => {
    await worker.stop(2000);
    const handler = h.services.handlers.find((x) => x.queue === 'delivery')!;
    const claim = async (): Promise<ClaimedJob> => {
      const [job] = await h.services.queue.claim('delivery', 1);
      if (!job) throw new Error('no due delivery job');
      return job;
    };
    try {
      // The cancel comes between the claim and the run: the run finds nothing to start.
      const a = await schedule(isoIn(MINUTE));
      h.clock.advance(MINUTE);
      const jobA = await claim();
      expect((await post(`/messages/${a.message_id}/cancel`)).statusCode).toBe(200);
      await handler.handle(jobA, new AbortController().signal);
      expect(copiesOf(a.message_id)).toHaveLength(0);
      expect((await sentView(a.message_id)).status).toBe('cancelled');

      // The run started (and finished) first: the cancel is refused and changes nothing.
      const b = await schedule(isoIn(MINUTE));
      h.clock.advance(MINUTE);
      await handler.handle(await claim(), new AbortController().signal);
      expect(errorOf(await post(`/messages/${b.message_id}/cancel`))).toMatchObject({ status: 409, error: 'message_not_scheduled' });
      expect(copiesOf(b.message_id)).toHaveLength(1);
      expect((await sentView(b.message_id)).status).toBe('accepted');
    } finally {
      worker = startWorker(h.services);
    }
  });

  it('a worker started anew on the same database delivers a message scheduled before the restart, at its time', async () => {
    const sendAt = h.clock.now() + 10 * MINUTE;
    const { message_id: id } = await schedule(new Date(sendAt).toISOString());
    await worker.stop(2000);
    const next = await createServices(h.config, { clock: h.clock });
    const restarted = startWorker(next);
    try {
      h.clock.set(sendAt);
      await delivered(id);
    } finally {
      await restarted.stop(2000);
      next.deliverer.close?.();
      await next.analyzer.close();
      await next.signer.close();
      await next.database.destroy();
      worker = startWorker(h.services);
    }
  });

  it('the CLI: send --at, sent, messages reschedule and cancel, drafts send --at', async () => {
    const user = cliUser(await listen(h.app));
    expect((await user.login(acme.ownerEmail, acme.password)).code).toBe(0);
    const first = new Date(h.clock.now() + 10 * MINUTE).toISOString();
    const sent = await user.run(['send', '--from', NEWS, '--to', 'cli@peer.test', '--subject', 'Later', '--body', 'From the CLI.', '--at', first]);
    expect(sent.code, sent.stderr).toBe(0);
    const id = /msg_[0-9a-z]{26}/.exec(sent.stdout)![0];
    expect(sent.stdout).toBe(`${id} is scheduled for ${first} (mailroom messages cancel ${id} cancels it)\n`);
    expect((await user.run(['sent'])).stdout).toContain(`scheduled for ${first}`);
    expect((await user.run(['messages', 'show', id])).stdout).toMatch(new RegExp(`Send at +${first}`));

    const later = new Date(h.clock.now() + 20 * MINUTE).toISOString();
    const moved = await user.run(['messages', 'reschedule', id, '--at', later]);
    expect(moved.stdout, moved.stderr).toBe(`${id} is scheduled, for ${later}\n`);
    expect((await user.run(['messages', 'reschedule', id])).stderr).toContain("required option '--at <time>' not specified");
    const tooFar = await user.run(['messages', 'reschedule', id, '--at', new Date(h.clock.now() + 31 * DAY).toISOString()]);
    expect(tooFar.code).not.toBe(0);
    expect(tooFar.stderr).toContain('send_at must be at most 30 days ahead');

    expect((await user.run(['messages', 'cancel', id])).stdout).toBe(`${id} is cancelled\n`);
    const again = await user.run(['messages', 'cancel', id]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('is cancelled: only a scheduled message can be cancelled or rescheduled');

    const draft = await user.json<{ draft_id: string }>(['drafts', 'create', '--mailbox', NEWS, '--to', 'cli@peer.test', '--subject', 'Draft', '--body', 'Later.']);
    const drafted = await user.run(['drafts', 'send', draft.draft_id, '--at', later]);
    expect(drafted.stdout, drafted.stderr).toMatch(new RegExp(`^sent ${draft.draft_id}: msg_[0-9a-z]{26} is scheduled for ${later} `));
    // A time without an offset is local time (the test runs in the process's time zone, as the CLI does).
    const local = new Date(h.clock.now() + 30 * MINUTE);
    const pad = (n: number) => String(n).padStart(2, '0');
    const text = `${local.getFullYear()}-${pad(local.getMonth() + 1)}-${pad(local.getDate())} ${pad(local.getHours())}:${pad(local.getMinutes())}`;
    const localSend = await user.json<Queued>(['send', '--from', NEWS, '--to', 'cli@peer.test', '--subject', 'Local', '--body', 'x', '--at', text]);
    expect(localSend.send_at).toBe(new Date(Math.floor(local.getTime() / MINUTE) * MINUTE).toISOString());
  });

  it('ages from send_at: a message scheduled 29 days ahead is delivered, not expired (the maximum age is 4 days; last: sessions do not live that long)', async () => {
    const sendAt = h.clock.now() + 29 * DAY;
    const { message_id: id } = await schedule(new Date(sendAt).toISOString());
    h.clock.set(sendAt + MINUTE);
    const mail = await delivered(id);
    expect(dateHeader(mail)).toBe(rfc5322Date(sendAt));
  });

  it('is in the OpenAPI document on both surfaces', async () => {
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, { operationId?: string }>> }>();
    expect(doc.paths['/messages/{message_id}/cancel']?.post?.operationId).toBe('cancelScheduledMessage');
    expect(doc.paths['/app/api/messages/{message_id}/cancel']?.post?.operationId).toBe('appCancelScheduledMessage');
    expect(doc.paths['/messages/{message_id}/reschedule']?.post?.operationId).toBe('rescheduleMessage');
    expect(doc.paths['/app/api/messages/{message_id}/reschedule']?.post?.operationId).toBe('appRescheduleMessage');
  });
});
