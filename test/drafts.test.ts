import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, errorOf, memberSession, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import type { ReceivedMail, SmtpPeer } from './helpers/smtp-peer.js';
import { messageOfReturnPath } from './helpers/reports.js';
import { mailWorld } from './helpers/world.js';

interface Draft {
  draft_id: string;
  mailbox: string;
  to: string[];
  cc: string[];
  bcc: string[];
  subject: string;
  body: string;
  html: string | null;
  in_reply_to: string | null;
  attachments: unknown[];
  created_at: string;
  updated_at: string;
}
interface DraftPage {
  drafts: Draft[];
  total: number;
  limit: number;
  offset: number;
}
interface Queued {
  message_id: string;
  status: string;
}
interface Message {
  message_id: string;
  mailbox: string;
  direction: string;
  folder: string;
  thread_id: string;
  subject: string;
  text: string | null;
  html: string | null;
  internet_message_id: string | null;
}

const SUPPORT = 'helpdesk@mailroom.localhost';
const SALES = 'orders@mailroom.localhost';
const THEIRS = 'theirs@mailroom.localhost';

describe(`drafts (${TEST_DIALECT})`, () => {
  const world = mailWorld();
  let h: MailHarness;
  let peer: SmtpPeer;
  let acme: Tenant;
  let other: Tenant;
  let member: string;
  let owner: string;
  let outsider: string;

  beforeAll(async () => {
    ({ h, peer } = world);
    acme = await world.tenant('Acme');
    other = await world.tenant('Other');
    for (const address of [SUPPORT, SALES]) await h.app.inject({ method: 'POST', url: `/mailboxes?address=${address}`, headers: bearer(acme.apiKey) });
    await h.app.inject({ method: 'POST', url: `/mailboxes?address=${THEIRS}`, headers: bearer(other.apiKey) });
    member = (await memberSession(h, acme.workspaceId, 'member')).token;
    owner = (await memberSession(h, acme.workspaceId, 'owner')).token;
    outsider = (await memberSession(h, other.workspaceId, 'member')).token;
  });

  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token: string | null = member, payload?: unknown) =>
    h.app.inject({ method, url: `/app/api${url}`, headers: token === null ? {} : session(token), ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
  const create = (payload: Record<string, unknown>, token: string = member) => call('POST', '/drafts', token, payload);
  const created = async (payload: Record<string, unknown>, token: string = member): Promise<Draft> => {
    const res = await create(payload, token);
    expect(res.statusCode, res.body).toBe(201);
    return res.json<Draft>();
  };
  const send = (id: string, token: string = member) => call('POST', `/drafts/${id}/send`, token);
  const message = async (id: string) => (await call('GET', `/messages/${id}`)).json<Message>();

  async function settle(id: string): Promise<string> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const view = await world.message(acme, id);
      const status = view?.status ?? 'missing';
      if (!['queued', 'processing'].includes(status)) return status;
      if (Date.now() > deadline) throw new Error(`outbound ${id} stuck at ${status}: ${JSON.stringify(view?.attempts)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  const deliveredCopies = (id: string): ReceivedMail[] => peer.accepted.filter((m) => messageOfReturnPath(h, m.mailFrom) === id);
  /** The header block of a delivered message, unfolded. */
  const headerOf = (mail: ReceivedMail, name: string): string | undefined => {
    const head = mail.raw.toString().split(/\r\n\r\n/)[0]!.replace(/\r\n[ \t]+/g, ' ');
    return head
      .split('\r\n')
      .find((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`))
      ?.slice(name.length + 1)
      .trim();
  };

  it('answers 401 without a session on every route', async () => {
    const id = (await created({ mailbox: SUPPORT })).draft_id;
    const routes: Array<['GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown]> = [
      ['GET', '/drafts', undefined],
      ['POST', '/drafts', { mailbox: SUPPORT }],
      ['GET', `/drafts/${id}`, undefined],
      ['PATCH', `/drafts/${id}`, { subject: 'x' }],
      ['DELETE', `/drafts/${id}`, undefined],
      ['POST', `/drafts/${id}/send`, undefined],
    ];
    for (const [method, url, payload] of routes) {
      expect(errorOf(await call(method, url, null, payload))).toMatchObject({ status: 401, error: 'missing_credential' });
      expect(errorOf(await call(method, url, 'mrs_not-a-session', payload))).toMatchObject({ status: 401, error: 'invalid_session' });
    }
    expect((await call('GET', `/drafts/${id}`)).statusCode).toBe(200);
  });

  it('creates with defaults, reads, lists newest first with a mailbox filter, and deletes', async () => {
    const minimal = await created({ mailbox: 'Helpdesk@Mailroom.Localhost' });
    expect(minimal).toEqual({
      draft_id: expect.stringMatching(/^drf_[0-9a-z]{26}$/) as unknown,
      mailbox: SUPPORT,
      to: [],
      cc: [],
      bcc: [],
      subject: '',
      body: '',
      html: null,
      in_reply_to: null,
      attachments: [],
      created_at: '2026-11-21T12:00:00.000Z',
      updated_at: '2026-11-21T12:00:00.000Z',
    });
    h.clock.advance(1000);
    const full = await created({ mailbox: SALES, to: ['Alice@Peer.Test', 'alice@peer.test', 'bob@peer.test'], cc: ['carol@peer.test'], bcc: ['dave@peer.test'], subject: 'Plans', body: 'Text', html: '<p>Text</p>' });
    expect(full).toMatchObject({ mailbox: SALES, to: ['alice@peer.test', 'bob@peer.test'], cc: ['carol@peer.test'], bcc: ['dave@peer.test'], subject: 'Plans', body: 'Text', html: '<p>Text</p>', created_at: '2026-11-21T12:00:01.000Z' });
    expect((await call('GET', `/drafts/${full.draft_id}`)).json<Draft>()).toEqual(full);

    const all = (await call('GET', '/drafts')).json<DraftPage>();
    expect(all.limit).toBe(50);
    expect(all.offset).toBe(0);
    expect(all.total).toBe(all.drafts.length);
    const ids = all.drafts.map((d) => d.draft_id);
    expect(ids.indexOf(full.draft_id)).toBeLessThan(ids.indexOf(minimal.draft_id));
    expect([...ids].sort().reverse()).toEqual(ids); // newest first (ids sort by creation)

    const sales = (await call('GET', `/drafts?mailbox=${encodeURIComponent('ORDERS@mailroom.localhost')}`)).json<DraftPage>();
    expect(sales.drafts.every((d) => d.mailbox === SALES)).toBe(true);
    expect(sales.drafts.map((d) => d.draft_id)).toContain(full.draft_id);
    expect(sales.total).toBe(sales.drafts.length);
    const page = (await call('GET', '/drafts?limit=1&offset=1')).json<DraftPage>();
    expect(page).toMatchObject({ total: all.total, limit: 1, offset: 1 });
    expect(page.drafts.map((d) => d.draft_id)).toEqual([ids[1]]);

    expect((await call('DELETE', `/drafts/${full.draft_id}`)).json()).toEqual({ ok: true, draft_id: full.draft_id });
    expect(errorOf(await call('GET', `/drafts/${full.draft_id}`))).toMatchObject({ status: 404, error: 'draft_not_found' });
    expect(errorOf(await call('DELETE', `/drafts/${full.draft_id}`))).toMatchObject({ status: 404, error: 'draft_not_found' });
    expect((await call('GET', '/drafts')).json<DraftPage>().total).toBe(all.total - 1);
  });

  it('PATCH changes only the fields given', async () => {
    const draft = await created({ mailbox: SUPPORT, to: ['a@peer.test'], cc: ['c@peer.test'], subject: 'Before', body: 'Body', html: '<b>Body</b>' });
    h.clock.advance(5000);
    const patch = async (payload: Record<string, unknown>) => {
      const res = await call('PATCH', `/drafts/${draft.draft_id}`, member, payload);
      expect(res.statusCode, res.body).toBe(200);
      return res.json<Draft>();
    };
    const subject = await patch({ subject: 'After' });
    expect(subject).toEqual({ ...draft, subject: 'After', updated_at: new Date(Date.parse(draft.updated_at) + 5000).toISOString() });
    expect(await patch({ to: ['X@Peer.Test', 'y@peer.test'], html: null })).toEqual({ ...subject, to: ['x@peer.test', 'y@peer.test'], html: null });
    expect(await patch({ cc: [], bcc: ['hidden@peer.test'], mailbox: SALES, body: '' })).toMatchObject({ mailbox: SALES, cc: [], bcc: ['hidden@peer.test'], body: '', subject: 'After', to: ['x@peer.test', 'y@peer.test'] });
    // An empty patch changes nothing, not even updated_at.
    const before = (await call('GET', `/drafts/${draft.draft_id}`)).json<Draft>();
    h.clock.advance(1000);
    expect(await patch({})).toEqual(before);
    expect(before.created_at).toBe(draft.created_at);
  });

  it('takes to, cc and bcc in every form a send takes: one address, a comma-separated list, an array (POST and PATCH)', async () => {
    const forms: Array<[string, unknown, string[]]> = [
      ['one address', 'One@Peer.Test', ['one@peer.test']],
      ['a comma-separated list', 'a@peer.test, B@peer.test ,c@peer.test,a@peer.test', ['a@peer.test', 'b@peer.test', 'c@peer.test']],
      ['a list with display names', 'Ann <ann@peer.test>, bob@peer.test', ['ann@peer.test', 'bob@peer.test']],
      ['an array', ['x@peer.test', 'Y@peer.test'], ['x@peer.test', 'y@peer.test']],
      ['an empty string', '', []],
      ['an empty array', [], []],
    ];
    for (const [name, value, shown] of forms) {
      const draft = await created({ mailbox: SUPPORT, to: value, cc: value, bcc: value });
      expect({ to: draft.to, cc: draft.cc, bcc: draft.bcc }, name).toEqual({ to: shown, cc: shown, bcc: shown });
      const other = await created({ mailbox: SUPPORT, to: ['before@peer.test'] });
      for (const field of ['to', 'cc', 'bcc'] as const) {
        const res = await call('PATCH', `/drafts/${other.draft_id}`, member, { [field]: value });
        expect(res.statusCode, `PATCH ${field} ${name}: ${res.body}`).toBe(200);
        expect(res.json<Draft>()[field], `PATCH ${field} ${name}`).toEqual(shown);
      }
      expect((await call('GET', `/drafts/${other.draft_id}`)).json<Draft>()).toMatchObject({ to: shown, cc: shown, bcc: shown });
    }

    const draft = await created({ mailbox: SUPPORT, to: 'keep@peer.test' });
    const refusals: Array<[string, unknown, string]> = [
      ['a bad address alone', 'not an address', 'invalid_recipient'],
      ['a bad address in a list', 'ok@peer.test, nope', 'invalid_recipient'],
      ['a bad address in an array', ['ok@peer.test', 'nope@'], 'invalid_recipient'],
      ['51 addresses in a list', Array.from({ length: 51 }, (_, i) => `r${i}@peer.test`).join(','), 'too_many_recipients'],
    ];
    for (const [name, value, error] of refusals) {
      for (const field of ['to', 'cc', 'bcc'] as const) {
        expect(errorOf(await create({ mailbox: SUPPORT, [field]: value })), `POST ${field} ${name}`).toMatchObject({ status: 400, error });
        expect(errorOf(await call('PATCH', `/drafts/${draft.draft_id}`, member, { [field]: value })), `PATCH ${field} ${name}`).toMatchObject({ status: 400, error });
      }
    }
    expect((await call('GET', `/drafts/${draft.draft_id}`)).json<Draft>()).toEqual(draft);

    // A draft written with strings sends like one written with arrays.
    const listed = await created({ mailbox: SUPPORT, to: 'one@peer.test, two@peer.test', cc: 'three@peer.test', subject: 'Strings', body: 'x' });
    const res = await send(listed.draft_id);
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<Queued>().message_id;
    expect(await settle(id)).toBe('accepted');
    expect(deliveredCopies(id).flatMap((m) => m.recipients).sort()).toEqual(['one@peer.test', 'three@peer.test', 'two@peer.test']);
  });

  it('refuses invalid input with 400 and names of other workspaces with 404', async () => {
    const draft = await created({ mailbox: SUPPORT });
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['no mailbox', { subject: 'x' }, 'invalid_request'],
      ['unknown field', { mailbox: SUPPORT, colour: 'red' }, 'invalid_request'],
      ['to as an object', { mailbox: SUPPORT, to: { address: 'a@peer.test' } }, 'invalid_request'],
      ['to with a number', { mailbox: SUPPORT, to: [5] }, 'invalid_request'],
      ['bad address', { mailbox: SUPPORT, to: ['not an address'] }, 'invalid_recipient'],
      ['too many in one field', { mailbox: SUPPORT, cc: Array.from({ length: 51 }, (_, i) => `r${i}@peer.test`) }, 'invalid_request'],
      ['long subject', { mailbox: SUPPORT, subject: 'x'.repeat(999) }, 'invalid_request'],
      ['html as a number', { mailbox: SUPPORT, html: 1 }, 'invalid_request'],
      ['in_reply_to empty', { mailbox: SUPPORT, in_reply_to: '' }, 'invalid_request'],
    ];
    for (const [name, payload, error] of cases) {
      expect(errorOf(await create(payload)), name).toMatchObject({ status: 400, error });
      if (name === 'no mailbox') continue; // a valid patch
      expect(errorOf(await call('PATCH', `/drafts/${draft.draft_id}`, member, { ...payload, mailbox: undefined })), `PATCH ${name}`).toMatchObject({ status: 400, error });
    }
    expect(errorOf(await call('PATCH', `/drafts/${draft.draft_id}`, member, { mailbox: null }))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('POST', '/drafts?mailbox=helpdesk@mailroom.localhost', member, { mailbox: SUPPORT }))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('GET', '/drafts?limit=0'))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('GET', '/drafts?limit=501'))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('GET', '/drafts?offset=-1'))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await call('GET', '/drafts?folder=inbox'))).toMatchObject({ status: 400, error: 'invalid_request' });
    const text = await h.app.inject({ method: 'POST', url: '/app/api/drafts', headers: { ...session(member), 'content-type': 'text/plain' }, payload: 'mailbox' });
    expect(errorOf(text)).toMatchObject({ status: 415 });
    expect(errorOf(await call('PATCH', `/drafts/${draft.draft_id}`))).toMatchObject({ status: 400, error: 'invalid_request' });
    expect(errorOf(await create({ mailbox: SUPPORT, bcc: Array.from({ length: 51 }, (_, i) => `b${i}@peer.test`) }))).toMatchObject({ status: 400, detail: 'body.bcc must NOT have more than 50 items' });
    // Drafts are a session-surface resource only.
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/drafts', headers: bearer(acme.apiKey) }))).toMatchObject({ status: 404, error: 'not_found' });

    // Names that do not exist in this workspace: 404, never a hint that they exist elsewhere.
    const theirMessage = (await h.send({ from: 'x@sender.test', to: THEIRS, subject: 'For them', text: 'x' })).response.match(/msg_[0-9a-z]{26}/)![0];
    for (const [payload, error] of [
      [{ mailbox: THEIRS }, 'mailbox_not_found'],
      [{ mailbox: 'nobody@mailroom.localhost' }, 'mailbox_not_found'],
      [{ mailbox: SUPPORT, in_reply_to: theirMessage }, 'message_not_found'],
      [{ mailbox: SUPPORT, in_reply_to: 'msg_00000000000000000000000000' }, 'message_not_found'],
    ] as const) {
      expect(errorOf(await create(payload))).toMatchObject({ status: 404, error });
      expect(errorOf(await call('PATCH', `/drafts/${draft.draft_id}`, member, payload))).toMatchObject({ status: 404, error });
    }
    expect(errorOf(await call('GET', `/drafts?mailbox=${THEIRS}`))).toMatchObject({ status: 404, error: 'mailbox_not_found' });
    // Nothing of the refused patches stuck.
    expect((await call('GET', `/drafts/${draft.draft_id}`)).json<Draft>()).toEqual(draft);
  });

  it("keeps workspaces apart: another workspace's draft is 404 on every route and untouched", async () => {
    const mine = await created({ mailbox: SUPPORT, to: ['a@peer.test'], subject: 'Mine' });
    const theirs = await created({ mailbox: THEIRS, to: ['b@peer.test'], subject: 'Theirs' }, outsider);
    for (const [method, url, payload] of [
      ['GET', `/drafts/${mine.draft_id}`, undefined],
      ['PATCH', `/drafts/${mine.draft_id}`, { subject: 'Hijacked' }],
      ['DELETE', `/drafts/${mine.draft_id}`, undefined],
      ['POST', `/drafts/${mine.draft_id}/send`, undefined],
    ] as const) {
      expect(errorOf(await call(method, url, outsider, payload)), `${method} ${url}`).toMatchObject({ status: 404, error: 'draft_not_found' });
    }
    expect((await call('GET', `/drafts/${mine.draft_id}`)).json<Draft>()).toEqual(mine);
    const theirList = (await call('GET', '/drafts', outsider)).json<DraftPage>();
    expect(theirList.drafts.map((d) => d.draft_id)).toEqual([theirs.draft_id]);
    expect(theirList.total).toBe(1);
    expect((await call('GET', '/drafts')).json<DraftPage>().drafts.map((d) => d.draft_id)).not.toContain(theirs.draft_id);
  });

  it('sends: 202, delivered once with the draft content, a copy in sent, and the draft is gone', async () => {
    const draft = await created({ mailbox: SUPPORT, to: ['to@peer.test'], cc: ['cc@peer.test'], bcc: ['bcc@peer.test'], subject: 'Draft subject', body: 'Draft body text', html: '<p>Draft <b>html</b></p>' });
    const res = await send(draft.draft_id);
    expect(res.statusCode, res.body).toBe(202);
    const queued = res.json<Queued>();
    expect(queued).toEqual({ message_id: expect.stringMatching(/^msg_[0-9a-z]{26}$/) as unknown, status: 'queued' });
    expect(errorOf(await call('GET', `/drafts/${draft.draft_id}`))).toMatchObject({ status: 404, error: 'draft_not_found' });
    expect(errorOf(await send(draft.draft_id))).toMatchObject({ status: 404, error: 'draft_not_found' });

    expect(await settle(queued.message_id)).toBe('accepted');
    // One transaction per recipient, each with its own return path, carrying the same message.
    const copies = deliveredCopies(queued.message_id);
    expect(copies.flatMap((m) => m.recipients).sort()).toEqual(['bcc@peer.test', 'cc@peer.test', 'to@peer.test']);
    expect(new Set(copies.map((m) => m.raw.toString())).size).toBe(1);
    const mail = copies[0]!;
    expect(headerOf(mail, 'From')).toBe(SUPPORT);
    expect(headerOf(mail, 'To')).toBe('to@peer.test');
    expect(headerOf(mail, 'Cc')).toBe('cc@peer.test');
    expect(headerOf(mail, 'Bcc')).toBeUndefined();
    expect(headerOf(mail, 'Subject')).toBe('Draft subject');
    expect(headerOf(mail, 'In-Reply-To')).toBeUndefined();
    const raw = mail.raw.toString();
    expect(raw).toContain('Draft body text');
    expect(raw).toContain('<p>Draft <b>html</b></p>');

    const copy = await message(queued.message_id);
    expect(copy).toMatchObject({ mailbox: SUPPORT, direction: 'outbound', folder: 'sent', subject: 'Draft subject', text: 'Draft body text', html: '<p>Draft <b>html</b></p>' });
    const events = world.events('message.sent').filter((e) => JSON.stringify(e).includes(queued.message_id));
    expect(events).toHaveLength(1);
    // Later work of the worker delivers nothing more.
    await new Promise((r) => setTimeout(r, 200));
    expect(peer.received.filter((m) => messageOfReturnPath(h, m.mailFrom) === queued.message_id)).toHaveLength(3);
  });

  it('of concurrent sends of one draft exactly one is queued', async () => {
    const draft = await created({ mailbox: SUPPORT, to: ['race@peer.test'], subject: 'Race', body: 'once' });
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(draft.draft_id)));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([202, 404, 404, 404, 404]);
    const id = answers.find((a) => a.statusCode === 202)!.json<Queued>().message_id;
    expect(await settle(id)).toBe('accepted');
    expect(peer.accepted.filter((m) => m.recipients.includes('race@peer.test'))).toHaveLength(1);
    const outbound = (await world.sentMessages(acme)).filter((m) => m.subject === 'Race');
    expect(outbound).toHaveLength(1);
  });

  it('refuses to send what cannot be sent with 400 and keeps the draft', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ mailbox: SUPPORT, subject: 'No recipients' }, 'invalid_request'],
      [{ mailbox: SUPPORT, cc: ['only-cc@peer.test'] }, 'invalid_request'],
      [{ mailbox: SUPPORT, to: Array.from({ length: 30 }, (_, i) => `t${i}@peer.test`), cc: Array.from({ length: 30 }, (_, i) => `c${i}@peer.test`) }, 'too_many_recipients'],
    ];
    for (const [payload, error] of cases) {
      const draft = await created(payload);
      expect(errorOf(await send(draft.draft_id))).toMatchObject({ status: 400, error });
      expect((await call('GET', `/drafts/${draft.draft_id}`)).json<Draft>()).toEqual(draft);
    }
  });

  it('a blocked recipient answers 422, records message.rejected and keeps the draft', async () => {
    expect((await call('POST', '/lists/outbound/block', owner, { entry: 'blocked-drafts.test' })).statusCode).toBe(201);
    const draft = await created({ mailbox: SUPPORT, to: ['ok@peer.test', 'someone@blocked-drafts.test'], subject: 'Blocked' });
    expect(errorOf(await send(draft.draft_id))).toMatchObject({ status: 422, error: 'recipient_blocked' });
    expect((await call('GET', `/drafts/${draft.draft_id}`)).json<Draft>()).toEqual(draft);
    const rejected = world.events('message.rejected');
    expect(rejected.filter((e) => e.data.recipient === 'someone@blocked-drafts.test')).toHaveLength(1);
    expect((await world.sentMessages(acme)).filter((m) => m.subject === 'Blocked')).toHaveLength(0);
  });

  it('sends from a mailbox of a verified sending domain', async () => {
    const domain = (await call('POST', '/sending-domains', owner, { domain: 'drafts-verified.example' })).json<{ domain_id: string; verification: { record_value: string } }>();
    h.dns.set('_mailroom-verification.drafts-verified.example', { TXT: [domain.verification.record_value] });
    expect((await call('POST', `/sending-domains/${domain.domain_id}/verify`, owner)).json()).toMatchObject({ status: 'verified' });
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=hello@drafts-verified.example', headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    const draft = await created({ mailbox: 'hello@drafts-verified.example', to: ['verified@peer.test'], subject: 'From a verified domain' });
    const res = await send(draft.draft_id);
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<Queued>().message_id;
    expect(await settle(id)).toBe('accepted');
    expect(headerOf(deliveredCopies(id)[0]!, 'From')).toBe('hello@drafts-verified.example');
  });

  it('a reply carries In-Reply-To and References and joins the thread of the message it answers', async () => {
    // Mixed-case Message-IDs (Gmail's look like this) go back out exactly as they came.
    const info = await h.send({
      from: 'Customer <customer@peer.test>',
      to: SUPPORT,
      subject: 'Where is my order?',
      text: 'It has not arrived.',
      messageId: '<CAbcDEF123.Order@Sender.Test>',
      references: ['<Root-1@Sender.Test>'],
      inReplyTo: '<Root-1@Sender.Test>',
    });
    const originalId = info.response.match(/msg_[0-9a-z]{26}/)![0];
    const original = await message(originalId);

    const draft = await created({ mailbox: SUPPORT, to: ['customer@peer.test'], subject: 'Re: Where is my order?', body: 'It ships today.', in_reply_to: originalId });
    expect(draft.in_reply_to).toBe(originalId);
    const first = await send(draft.draft_id);
    expect(first.statusCode, first.body).toBe(202);
    const replyId = first.json<Queued>().message_id;
    expect(await settle(replyId)).toBe('accepted');
    const delivered = deliveredCopies(replyId);
    expect(delivered).toHaveLength(1);
    expect(headerOf(delivered[0]!, 'In-Reply-To')).toBe('<CAbcDEF123.Order@Sender.Test>');
    expect(headerOf(delivered[0]!, 'References')).toBe('<Root-1@Sender.Test> <CAbcDEF123.Order@Sender.Test>');
    const reply = await message(replyId);
    expect(reply).toMatchObject({ direction: 'outbound', folder: 'sent', thread_id: original.thread_id });

    // A follow-up to our own reply: its headers come from the stored source of the outbound copy.
    const followUp = await created({ mailbox: SUPPORT, to: ['customer@peer.test'], subject: 'Re: Where is my order?', body: 'Tracking: 42.', in_reply_to: replyId });
    const second = await send(followUp.draft_id);
    expect(second.statusCode, second.body).toBe(202);
    const followUpId = second.json<Queued>().message_id;
    expect(await settle(followUpId)).toBe('accepted');
    const copy = deliveredCopies(followUpId)[0]!;
    expect(headerOf(copy, 'In-Reply-To')).toBe(`<${reply.internet_message_id}>`);
    expect(headerOf(copy, 'References')).toBe(`<Root-1@Sender.Test> <CAbcDEF123.Order@Sender.Test> <${reply.internet_message_id}>`);
    expect((await message(followUpId)).thread_id).toBe(original.thread_id);

    const thread = (await call('GET', `/threads/${original.thread_id}`)).json<{ message_count: number; messages: Array<{ message_id: string }> }>();
    expect(thread.message_count).toBe(3);
    expect(thread.messages.map((m) => m.message_id)).toEqual([originalId, replyId, followUpId]);
  });

  it('a reply whose original was deleted meanwhile answers 404 and stays a draft', async () => {
    const info = await h.send({ from: 'gone@peer.test', to: SUPPORT, subject: 'Soon deleted', text: 'x' });
    const originalId = info.response.match(/msg_[0-9a-z]{26}/)![0];
    const draft = await created({ mailbox: SUPPORT, to: ['gone@peer.test'], in_reply_to: originalId });
    expect((await call('DELETE', `/messages/${originalId}`)).statusCode).toBe(200);
    expect(errorOf(await send(draft.draft_id))).toMatchObject({ status: 404, error: 'message_not_found' });
    expect((await call('GET', `/drafts/${draft.draft_id}`)).statusCode).toBe(200);
    expect((await call('PATCH', `/drafts/${draft.draft_id}`, member, { in_reply_to: null })).json<Draft>().in_reply_to).toBeNull();
  });

  it('deleting a mailbox deletes its drafts', async () => {
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes?address=temp@mailroom.localhost', headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    const draft = await created({ mailbox: 'temp@mailroom.localhost', subject: 'Temporary' });
    const res = await h.app.inject({ method: 'DELETE', url: '/mailboxes/temp@mailroom.localhost', headers: bearer(acme.apiKey) });
    expect(res.statusCode).toBe(200);
    expect(errorOf(await call('GET', `/drafts/${draft.draft_id}`))).toMatchObject({ status: 404, error: 'draft_not_found' });
  });
});
