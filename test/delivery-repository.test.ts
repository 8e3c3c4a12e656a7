import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGroupCommit } from '../src/db/group-commit.js';
import { createLogger } from '../src/lib/logger.js';
import { asWork } from '../src/db/tables.js';
import { candidatesSelect } from '../src/modules/lists/list.store.js';
import { verifiedDomainsSelect } from '../src/modules/domains/domain.store.js';
import { createSendingMailStore, type DeliveryJob, type SendingMailStore } from '../src/modules/mail/sending-mail.store.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';
import { recordEvents, type RecordedEvents } from './helpers/world.js';

const LEASE_MS = 30_000;
const FROM = 'newsletter@mailroom.localhost';

// The mail store runs a delivery's lease-guarded steps as one statement each on PostgreSQL and as a check and a
// write in one transaction on SQLite: the same answers must come back, and a run without the lease changes nothing.
describe(`delivery runs in the mail store: a run's steps need its lease (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let tenant: Tenant;
  let recorded: RecordedEvents;
  let repo: Pick<SendingMailStore, 'startDeliveryRun' | 'markDataStarted' | 'settleDeliveryRun'>;

  beforeAll(async () => {
    h = await startMailHarness({ MAILROOM_LEASE_MS: String(LEASE_MS) });
    recorded = recordEvents(h.services);
    tenant = await createTenant(h);
    await h.app.inject({ method: 'POST', url: `/mailboxes?address=${FROM}`, headers: bearer(tenant.apiKey) });
    const { db, dialect } = h.services.database;
    const { queue, events } = h.services;
    repo = createSendingMailStore({
      work: asWork(db),
      dialect,
      commits: createGroupCommit(db),
      clock: h.clock,
      queue,
      logger: createLogger('silent'),
      emit: (trx, event) => events.emit(asWork(trx), event),
      listCandidates: candidatesSelect,
      verifiedDomains: verifiedDomainsSelect,
    });
  });
  afterAll(async () => {
    await h.close();
  });

  const outbound = (id: string) => h.services.database.db.selectFrom('outbound').selectAll().where('message_id', '=', id).executeTakeFirstOrThrow();
  /** Committed events of the type since the harness started. */
  const eventCount = (type: 'message.accepted' | 'message.failed') => recorded.events(type).length;

  /** Send one message and claim its delivery job. */
  async function queued(to: string): Promise<{ id: string; job: DeliveryJob }> {
    const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(tenant.apiKey), payload: { from_mailbox: FROM, to, subject: 'Hi', body: 'Hello' } });
    expect(res.statusCode, res.body).toBe(202);
    const [job] = await h.services.queue.claim<{ message_id: string }>('delivery', 1);
    return { id: res.json<{ message_id: string }>().message_id, job: job! };
  }
  /** Let the lease of the claimed job run out and claim the job again: another run of it. */
  async function claimedAgain(): Promise<DeliveryJob> {
    h.clock.advance(LEASE_MS + 1);
    const [job] = await h.services.queue.claim<{ message_id: string }>('delivery', 1);
    return job!;
  }

  it('a superseded run reads the state but neither starts, marks DATA nor settles; the current run does all three', async () => {
    const { id, job: first } = await queued('superseded@peer.test');
    const second = await claimedAgain();
    expect(second).toMatchObject({ id: first.id, attempt: 2 });
    const before = await outbound(id);

    const late = await repo.startDeliveryRun(first);
    expect(late).toMatchObject({ started: false, delivery: { message_id: id, status: 'queued', recipients: [{ address: 'superseded@peer.test', status: 'pending' }] } });
    expect(await outbound(id)).toEqual(before); // not marked processing
    expect(await repo.markDataStarted(first)).toBe(false);
    expect((await outbound(id)).data_started_at).toBeNull();

    const current = await repo.startDeliveryRun(second);
    expect(current).toMatchObject({ started: true, delivery: { status: 'queued' } }); // read before its own mark
    expect((await outbound(id)).status).toBe('processing');
    expect(await repo.markDataStarted(second)).toBe(true);
    expect((await outbound(id)).data_started_at).toBe(h.clock.now());

    const accepted = eventCount('message.accepted');
    const settlement = (status: 'accepted' | 'failed', type: 'message.accepted' | 'message.failed') => ({
      status,
      recipients: [{ address: 'superseded@peer.test', status, response: '250 ok', mx: null }],
      attempts: [],
      lastError: null,
      smtpResponse: '250 ok',
      events: [{ workspaceId: tenant.workspaceId, type, data: { message_id: id } }],
      outcome: { type: 'done' as const },
      backoff: { baseMs: 1000, factor: 2, capMs: 3_600_000, jitter: 0 },
    });
    expect(await repo.settleDeliveryRun(first, settlement('failed', 'message.failed'))).toBe(false);
    expect(await outbound(id)).toMatchObject({ status: 'processing', smtp_response: null });
    expect(eventCount('message.failed')).toBe(0);
    expect(await h.services.queue.inspect(asWork(h.services.database.db), { id: first.id })).toHaveLength(1);

    expect(await repo.settleDeliveryRun(second, settlement('accepted', 'message.accepted'))).toBe(true);
    expect(await outbound(id)).toMatchObject({ status: 'accepted', smtp_response: '250 ok', data_started_at: null });
    expect(eventCount('message.accepted')).toBe(accepted + 1);
    expect(await h.services.queue.inspect(asWork(h.services.database.db), { id: first.id })).toEqual([]);
  });

  it('a run whose DATA began elsewhere is not started again, even with the lease', async () => {
    const { id, job: first } = await queued('interrupted@peer.test');
    expect((await repo.startDeliveryRun(first))?.started).toBe(true);
    expect(await repo.markDataStarted(first)).toBe(true);
    const second = await claimedAgain();
    const run = await repo.startDeliveryRun(second);
    expect(run).toMatchObject({ started: false, delivery: { status: 'processing', data_started_at: expect.any(Number) as number } });
    expect((await outbound(id)).status).toBe('processing');
  });
});
