import { beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, session, type Tenant } from './helpers/harness.js';
import type { MailHarness } from './helpers/mail.js';
import { DMARC_XML, TLS_JSON, deliveredDsn, gzipOf, reportMail, zipOf } from './helpers/domain-reports.js';
import { mailWorld } from './helpers/world.js';

const DOMAIN = 'acme-reports.test';
const PERIOD = 'from=2026-11-01&to=2026-12-31T00:00:00Z';

interface Figures {
  domain: string;
  dmarc: Array<Record<string, unknown> & { source_ip: string; messages: number }>;
  tls: Array<Record<string, unknown> & { policy_type: string }>;
}

describe(`DMARC and TLS reports received into a mailbox (${TEST_DIALECT})`, () => {
  const world = mailWorld({ mx: [], a: ['peer.test'] });
  let h: MailHarness;
  let acme: Tenant;

  /** A fresh workspace with the sending domain and the report mailbox: each test's figures start empty. */
  async function workspace(name: string): Promise<{ tenant: Tenant; domainId: string; owner: string; mailbox: string }> {
    const mailbox = `dmarc-${name.toLowerCase()}@mailroom.localhost`;
    const tenant = await world.tenant(name, [mailbox]);
    const owner = await world.ownerSession(tenant);
    const created = await h.app.inject({ method: 'POST', url: '/app/api/sending-domains', headers: session(owner), payload: { domain: DOMAIN } });
    expect(created.statusCode, created.body).toBe(201);
    return { tenant, domainId: created.json<{ domain_id: string }>().domain_id, owner, mailbox };
  }

  async function mailReport(to: string, filename: string, contentType: string, attachment: Buffer): Promise<string> {
    const info = await h.sendRaw(reportMail({ to, domain: DOMAIN, filename, contentType, attachment }), { from: 'noreply-dmarc-support@google.com', to: [to] });
    expect(info.response).toMatch(/^250 /);
    return /Stored as (msg_[0-9a-z]+)/.exec(info.response)![1]!;
  }
  async function figures(owner: string, id: string): Promise<Figures> {
    const res = await h.app.inject({ method: 'GET', url: `/app/api/sending-domains/${id}/reports?${PERIOD}`, headers: session(owner) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Figures>();
  }
  async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const value = await read();
      if (done(value) || Date.now() > deadline) return value;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  /** Every report job of the workspace has run (done jobs leave the queue). */
  async function drained(tenant: Tenant): Promise<void> {
    const left = await until(() => h.services.queue.inspect(asWork(h.services.database.db), { queue: 'domain-reports', workspaceId: tenant.workspaceId }), (jobs) => jobs.length === 0);
    expect(left).toEqual([]);
  }
  const labelsOf = async (tenant: Tenant, id: string) => ((await world.message(tenant, id))?.labels as string[] | undefined) ?? [];

  beforeAll(async () => {
    ({ h } = world);
  });

  it.each([
    ['plain XML', 'google.com!acme-reports.test!1795910400!1795996799.xml', 'text/xml', (x: Buffer) => x],
    ['gzip', 'google.com!acme-reports.test!1795910400!1795996799.xml.gz', 'application/gzip', gzipOf],
    ['zip', 'google.com!acme-reports.test!1795910400!1795996799.zip', 'application/zip', (x: Buffer) => zipOf('google.com!acme-reports.test!1795910400!1795996799.xml', x)],
  ])('a DMARC aggregate report as %s becomes figures per source IP; the message is kept', async (name, filename, type, wrap) => {
    const ws = await workspace(`Dmarc${name.replace(/\W/g, '')}`);
    const id = await mailReport(ws.mailbox, filename, type, wrap(DMARC_XML));
    const seen = await until(() => figures(ws.owner, ws.domainId), (f) => f.dmarc.length > 0);
    expect(seen.domain).toBe(DOMAIN);
    expect(seen.dmarc).toEqual([
      { source_ip: '192.0.2.10', reports: 1, messages: 15, dkim: { pass: 15, fail: 0 }, spf: { pass: 12, fail: 3 }, aligned: { dkim_pass: 15, spf_pass: 12 }, dmarc: { pass: 15, fail: 0 }, disposition: { none: 15, quarantine: 0, reject: 0 } },
      { source_ip: '2001:db8::25', reports: 1, messages: 5, dkim: { pass: 0, fail: 5 }, spf: { pass: 0, fail: 5 }, aligned: { dkim_pass: 0, spf_pass: 0 }, dmarc: { pass: 0, fail: 5 }, disposition: { none: 0, quarantine: 5, reject: 0 } },
      { source_ip: '198.51.100.7', reports: 1, messages: 1, dkim: { pass: 0, fail: 1 }, spf: { pass: 0, fail: 1 }, aligned: { dkim_pass: 0, spf_pass: 0 }, dmarc: { pass: 0, fail: 1 }, disposition: { none: 0, quarantine: 0, reject: 1 } },
    ]);
    expect(seen.tls).toEqual([]);
    const message = await world.message(ws.tenant, id);
    expect(message?.folder).toBe('inbox');
    expect(message?.labels).toEqual([]);
    // The same report mailed again (a reporter's retry) counts once.
    await mailReport(ws.mailbox, filename, type, wrap(DMARC_XML));
    const again = await mailReport(ws.mailbox, filename.replace('1795996799', '1795996800'), type, wrap(Buffer.from(DMARC_XML.toString().replace('5717107811868587391', 'second'))));
    expect(again).toMatch(/^msg_/);
    await drained(ws.tenant);
    const twice = await figures(ws.owner, ws.domainId);
    expect(twice.dmarc[0]).toMatchObject({ source_ip: '192.0.2.10', reports: 2, messages: 30 });
  });

  it('a TLS report (application/tlsrpt+gzip) becomes session counts and failure types per policy', async () => {
    const ws = await workspace('Tls');
    await mailReport(ws.mailbox, 'company-x.example!acme-reports.test!1795910400!1795996799.json.gz', 'application/tlsrpt+gzip', gzipOf(TLS_JSON));
    const seen = await until(() => figures(ws.owner, ws.domainId), (f) => f.tls.length > 0);
    expect(seen.tls).toEqual([
      {
        policy_type: 'sts',
        reports: 1,
        successful: 5326,
        failed: 303,
        failure_types: [
          { result_type: 'certificate-expired', count: 100 },
          { result_type: 'starttls-not-supported', count: 200 },
          { result_type: 'validation-failure', count: 3 },
        ],
      },
    ]);
    expect(seen.dmarc).toEqual([]);
  });

  const xxe = `<?xml version="1.0"?>\n<!DOCTYPE feedback [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n${DMARC_XML.toString().replace(/^<\?xml[^>]*>\s*/, '').replace('<org_name>google.com</org_name>', '<org_name>&xxe;</org_name>')}`;
  it.each([
    ['XML that is not well-formed', 'x.test!acme-reports.test!1!2.xml', 'text/xml', Buffer.from(DMARC_XML.toString().replace('</feedback>', ''))],
    ['an external entity (XXE)', 'x.test!acme-reports.test!1!2.xml', 'text/xml', Buffer.from(xxe)],
    ['a gzip that inflates past 10 MB', 'x.test!acme-reports.test!1!2.xml.gz', 'application/gzip', gzipOf(Buffer.concat([Buffer.from('<feedback>'), Buffer.alloc(11 * 1024 * 1024, 0x20)]))],
    ['a zip whose entry inflates past 10 MB', 'x.test!acme-reports.test!1!2.zip', 'application/zip', zipOf('r.xml', Buffer.alloc(11 * 1024 * 1024, 0x20))],
    ['TLS JSON that does not parse', 'x.test!acme-reports.test!1!2.json', 'application/tlsrpt+json', Buffer.from('{"organization-name": "x", ')],
  ])('a report with %s is kept as a message, labelled report-malformed, with no figures', async (_name, filename, type, attachment) => {
    const ws = await workspace(`Bad${Math.random().toString(36).slice(2, 8)}`);
    const id = await mailReport(ws.mailbox, filename, type, attachment);
    const labels = await until(() => labelsOf(ws.tenant, id), (l) => l.includes('report-malformed'));
    expect(labels).toEqual(['report-malformed']);
    expect(await figures(ws.owner, ws.domainId)).toMatchObject({ dmarc: [], tls: [] });
  });

  it("another workspace's domain answers 404; a bad period 400", async () => {
    const mine = await workspace('Mine');
    const theirs = await workspace('Theirs');
    const res = await h.app.inject({ method: 'GET', url: `/app/api/sending-domains/${theirs.domainId}/reports`, headers: session(mine.owner) });
    expect(res.statusCode).toBe(404);
    const bad = await h.app.inject({ method: 'GET', url: `/app/api/sending-domains/${mine.domainId}/reports?from=yesterday`, headers: session(mine.owner) });
    expect(bad.statusCode).toBe(400);
  });

  it('a report about a domain that is not one of the workspace’s keeps no figures and no label', async () => {
    const ws = await workspace('Other');
    const id = await mailReport(ws.mailbox, 'google.com!elsewhere.test!1795910400!1795996799.xml', 'text/xml', Buffer.from(DMARC_XML.toString().replaceAll(DOMAIN, 'elsewhere.test')));
    await drained(ws.tenant);
    expect(await figures(ws.owner, ws.domainId)).toMatchObject({ dmarc: [], tls: [] });
    expect(await labelsOf(ws.tenant, id)).toEqual([]);
  });

  describe('delivery status notifications', () => {
    beforeAll(async () => {
      acme = await world.tenant('Sender');
      await h.app.inject({ method: 'POST', url: '/mailboxes?address=sender@mailroom.localhost', headers: bearer(acme.apiKey) });
    });

    it('a DSN with Action: delivered to the VERP address emits message.delivered for that recipient', async () => {
      const res = await h.app.inject({ method: 'POST', url: '/send', headers: bearer(acme.apiKey), payload: { from_mailbox: 'sender@mailroom.localhost', to: 'glad@peer.test', subject: 'Hi', body: 'hello' } });
      const id = res.json<{ message_id: string }>().message_id;
      await until(() => world.message(acme, id), (m) => m?.status === 'accepted');
      const verp = h.services.returnPaths.address(id, 0);
      const info = await h.sendRaw(deliveredDsn(verp, 'glad@peer.test'), { from: '', to: [verp] });
      expect(info.response).toMatch(/^250 /);
      const delivered = world.events('message.delivered').filter((e) => e.data.message_id === id);
      expect(delivered).toHaveLength(1);
      expect(delivered[0]).toMatchObject({ workspace_id: acme.workspaceId, data: { recipient: 'glad@peer.test', status: '2.0.0' } });
      expect(world.events('message.bounced').filter((e) => e.data.message_id === id)).toHaveLength(0);
      // A delivered report naming someone the message was not sent to changes nothing.
      await h.sendRaw(deliveredDsn(verp, 'stranger@peer.test'), { from: '', to: [verp] });
      expect(world.events('message.delivered').filter((e) => e.data.message_id === id)).toHaveLength(1);
    });
  });
});
