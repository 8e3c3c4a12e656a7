import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { candidatesSelect } from '../src/modules/lists/list.store.js';
import { createOutboundStore } from '../src/modules/mail/outbound.store.js';
import { createSuppressionStore } from '../src/modules/mail/suppression.store.js';
import { batchReads, ownReads, type SendReadStore } from '../src/modules/sending/send-reads.js';
import type { SendingDomains } from '../src/modules/sending/sending.deps.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, memberSession, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';

describe(`a batch's checks read once for all its messages (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  const sender = 'newsletter@mailroom.localhost';

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h);
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${sender}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    const owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    for (const entry of ['blocked@peer.test', 'banned.test']) {
      expect((await h.app.inject({ method: 'POST', url: '/app/api/lists/outbound/block', headers: session(owner), payload: { entry } })).statusCode).toBe(201);
    }
    await createSuppressionStore().suppress(asWork(h.services.database.db), [
      { workspace_id: acme.workspaceId, address: 'gone@peer.test', reason: 'manual', detail: null, status_code: null, message_id: null, created_at: Date.now() },
    ]);
  });
  afterAll(async () => h.close());

  /** The stores a send reads, counting their statements. */
  function counted() {
    const outbound = createOutboundStore({ listCandidates: candidatesSelect });
    const suppressions = createSuppressionStore();
    const calls = { readSender: 0, suppressedAmong: 0 };
    const store: SendReadStore = {
      readSender: (...args) => (calls.readSender++, outbound.readSender(...args)),
      suppressedAmong: (...args) => (calls.suppressedAmong++, suppressions.suppressedAmong(...args)),
    };
    const domains: SendingDomains = { isAllowedDomain: (_workspace, domain) => Promise.resolve(domain === 'mailroom.localhost') };
    return { store, domains, calls };
  }

  it('judges each message on its own recipients as its own reads would, in a few statements for a hundred messages', async () => {
    // 100 messages of 1-3 recipients each: 153 distinct addresses, one blocked by address, one by domain, one suppressed.
    const messages = Array.from({ length: 100 }, (_, i) => {
      const all = [`user${i}@peer${i % 7}.test`];
      if (i % 2 === 0) all.push(`extra${i}@example.net`);
      if (i === 10) all.push('blocked@peer.test');
      if (i === 20) all.push('someone@banned.test');
      if (i === 30) all.push('gone@peer.test');
      return all;
    });
    const work = asWork(h.services.database.db);
    const shared = counted();
    const reads = batchReads(shared.store, shared.domains, acme.workspaceId, work, new Map([[sender, new Set(messages.flat())]]));
    const batch = await Promise.all(messages.map(async (all) => ({ sender: await reads.sender(sender, all), suppressed: await reads.suppressed(all), allowed: await reads.domainAllowed('mailroom.localhost') })));
    // The addresses in chunks of 50, and their list keys (address, domain, parent domains) the same way.
    expect(new Set(messages.flat()).size).toBe(153);
    expect(shared.calls.suppressedAmong).toBe(4);
    expect(shared.calls.readSender).toBeGreaterThanOrEqual(4);
    expect(shared.calls.readSender).toBeLessThanOrEqual(8);

    const own = counted();
    for (const [i, all] of messages.entries()) {
      const alone = ownReads(own.store, own.domains, acme.workspaceId, work);
      const expected = { sender: await alone.sender(sender, all), suppressed: await alone.suppressed(all), allowed: true };
      expect(batch[i]).toEqual(expected);
    }
    expect(own.calls.readSender).toBe(100);
    // What the shared reads found is what matters to the messages: the refusals and the suppressed address.
    const refused = batch.flatMap((b, i) => b.sender.judged.flatMap((v, j) => (v.decision === 'refuse' ? [messages[i]![j]] : [])));
    expect(refused).toEqual(['blocked@peer.test', 'someone@banned.test']);
    expect(batch.flatMap((b) => [...b.suppressed])).toEqual(['gone@peer.test']);
    expect(batch.every((b) => b.sender.mailbox?.address === sender)).toBe(true);
  });

  it("finds no mailbox for another workspace's sender or an unknown one, and reads a sender once", async () => {
    const other = await createTenant(h, 'Other');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=theirs@mailroom.localhost', headers: bearer(other.apiKey) })).statusCode).toBe(201);
    const shared = counted();
    const recipients = new Map([
      ['theirs@mailroom.localhost', new Set(['a@peer.test'])],
      ['nobody@mailroom.localhost', new Set(['b@peer.test'])],
    ]);
    const reads = batchReads(shared.store, shared.domains, acme.workspaceId, asWork(h.services.database.db), recipients);
    expect((await reads.sender('theirs@mailroom.localhost', ['a@peer.test'])).mailbox).toBeUndefined();
    expect((await reads.sender('nobody@mailroom.localhost', ['b@peer.test'])).mailbox).toBeUndefined();
    expect((await reads.sender('nobody@mailroom.localhost', ['b@peer.test'])).mailbox).toBeUndefined();
    expect(shared.calls.readSender).toBe(2);
  });
});
