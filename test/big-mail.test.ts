import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ADDRESS_FIELD_BYTES } from '../src/modules/messages/mime.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

/** Until `done` holds, looking every few milliseconds (at most `ms`). */
async function until(done: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe(`heavy inbound mail costs its own tenant (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let f: Tenant;
  let g: Tenant;

  beforeAll(async () => {
    // One message analyzed at a time, so the order of turns is the order of grants.
    h = await startMailHarness({ MAILROOM_ANALYSIS_SLOTS: '1', MAILROOM_ANALYSIS_SLOTS_PER_WORKSPACE: '1' });
    f = await createTenant(h, 'F');
    g = await createTenant(h, 'G');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=f@mailroom.localhost', headers: bearer(f.apiKey) })).statusCode).toBe(201);
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=g@mailroom.localhost', headers: bearer(g.apiKey) })).statusCode).toBe(201);
  });
  afterAll(async () => h.close());

  it('stores a message with a megabyte of To with its addresses cut short and everything else intact', async () => {
    const to = Array.from({ length: 80_000 }, (_, i) => `r${i}@far.test`).join(', ');
    const raw = Buffer.from(
      [
        'From: Big <big@sender.test>',
        `To: f@mailroom.localhost, ${to}`,
        'Subject: many recipients',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="b"',
        '',
        '--b',
        'Content-Type: text/plain',
        '',
        'the body',
        '--b',
        'Content-Type: application/pdf',
        'Content-Disposition: attachment; filename="report.pdf"',
        'Content-Transfer-Encoding: base64',
        '',
        Buffer.from('%PDF-1.4 report').toString('base64'),
        '--b--',
        '',
      ].join('\r\n'),
    );
    expect(raw.length).toBeGreaterThan(1024 * 1024);
    const info = await h.sendRaw(raw, { from: 'big@sender.test', to: ['f@mailroom.localhost'] });
    const id = /Stored as (msg_\w+)/.exec(info.response)![1]!;
    const message = (await h.app.inject({ method: 'GET', url: `/messages/${id}`, headers: bearer(f.apiKey) })).json<{
      to: Array<{ address: string }>;
      subject: string;
      text: string;
      attachments: Array<{ filename: string; size: number }>;
    }>();
    expect(message.subject).toBe('many recipients');
    expect(message.text.trim()).toBe('the body');
    expect(message.attachments).toMatchObject([{ filename: 'report.pdf', size: 15 }]);
    expect(message.to[0]).toMatchObject({ address: 'f@mailroom.localhost' });
    // Cut to what fits the address field's bytes: far fewer than were sent, each one whole.
    expect(message.to.length).toBeGreaterThan(100);
    expect(message.to.length).toBeLessThan(MAX_ADDRESS_FIELD_BYTES / 10);
    expect(message.to.at(-1)!.address).toMatch(/^r\d+@far\.test$/);
    const source = await h.app.inject({ method: 'GET', url: `/messages/${id}/raw`, headers: bearer(f.apiKey) });
    expect(source.rawPayload.includes(Buffer.from(`r79999@far.test`))).toBe(true);
  });

  it('grants turns at the analyzer round-robin across workspaces, not in arrival order', async () => {
    const gate = h.services.analysisGate;
    // F's flood is under way: F holds the one turn, and five more of F's messages queue behind it.
    const held = await gate.acquire(f.workspaceId);
    const order: string[] = [];
    const send = (who: string, to: string) => h.send({ from: `${who}@sender.test`, to, subject: who, text: who }).then(() => order.push(who));
    const flood = ['f1', 'f2', 'f3', 'f4', 'f5'].map((who) => send(who, 'f@mailroom.localhost'));
    await until(() => gate.waitingFor(f.workspaceId) === 5);
    const other = send('g', 'g@mailroom.localhost');
    await until(() => gate.waitingFor(g.workspaceId) === 1);
    held();
    await Promise.all([...flood, other]);
    // In arrival order G's message would be analyzed last; round-robin gives it the turn after F's next one.
    expect(order.indexOf('g')).toBeLessThanOrEqual(1);
  });
});
