import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../src/main.js';
import { TEST_DIALECT } from './helpers/database.js';
import { ImapLines } from './helpers/imap-lines.js';
import { startImapService, type RunningImapService } from './helpers/imap-service.js';

// GET /metrics of a process running the imap role, after real IMAP sessions: sessions open by listener, logins by
// outcome, tagged answers by command and status, sessions in IDLE; no workspace or address in any label.

/** One sample's value from the exposition: the line `name{labels} value` (labels exactly, in prom-client's order). */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

const scrape = async (running: RunningService): Promise<string> => (await fetch(`${running.metricsUrl!}/metrics`)).text();

describe(`IMAP metrics (${TEST_DIALECT})`, () => {
  let service: RunningImapService;
  let running: RunningService;
  let workspaceId: string;
  let password: string;
  const address = 'metered@mailroom.localhost';
  const clients: ImapLines[] = [];

  beforeAll(async () => {
    service = await startImapService({ MAILROOM_METRICS_PORT: '0', MAILROOM_IMAP_MAX_CLIENTS_PER_WORKSPACE: '1' }, [address]);
    running = service.running;
    ({ workspaceId, password } = service.accounts.get(address)!);
  });

  afterAll(async () => {
    for (const c of clients) c.close();
    await service?.stop();
  });

  const open = async (): Promise<ImapLines> => {
    const client = await ImapLines.open(running.imapPort!);
    clients.push(client);
    return client;
  };

  it('counts sessions by listener, logins by outcome, answers by command and status, and IDLE, with no tenant in any label', async () => {
    const first = await open();
    expect((await first.command(`LOGIN ${address} "wrong password"`)).at(-1)).toMatch(/NO \[AUTHENTICATIONFAILED\]/);
    expect((await first.command(`LOGIN ${address} "${password}"`)).at(-1)).toMatch(/OK/);
    expect((await first.command('FROBNICATE')).at(-1)).toMatch(/BAD/);
    expect((await first.command('SELECT INBOX')).at(-1)).toMatch(/OK/);
    // The workspace's one session is taken.
    const second = await open();
    expect((await second.command(`LOGIN ${address} "${password}"`)).at(-1)).toMatch(/^t\d+ NO \[UNAVAILABLE\]/);
    first.send('i1 IDLE');
    await first.waitFor(/^\+ idling/);

    const idling = await scrape(running);
    expect(sample(idling, 'mailroom_imap_sessions_open', 'listener="imap"')).toBe(2);
    expect(sample(idling, 'mailroom_imap_idle_sessions')).toBe(1);
    first.send('DONE');
    await first.waitFor(/^i1 OK/);
    second.close();

    const text = await scrape(running);
    expect(sample(text, 'mailroom_imap_idle_sessions')).toBe(0);
    expect(sample(text, 'mailroom_imap_logins_total', 'outcome="ok"')).toBe(1);
    expect(sample(text, 'mailroom_imap_logins_total', 'outcome="failed"')).toBe(1);
    expect(sample(text, 'mailroom_imap_logins_total', 'outcome="limit"')).toBe(1);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="LOGIN",status="OK"')).toBe(1);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="LOGIN",status="NO"')).toBe(2);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="UNKNOWN",status="BAD"')).toBe(1);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="SELECT",status="OK"')).toBe(1);
    expect(sample(text, 'mailroom_imap_commands_total', 'command="IDLE",status="OK"')).toBe(1);
    expect(text).not.toContain(workspaceId);
    expect(text).not.toContain('metered@');
    expect(text).not.toContain('FROBNICATE');

    first.close();
    await expect.poll(async () => sample(await scrape(running), 'mailroom_imap_sessions_open', 'listener="imap"'), { timeout: 5000 }).toBe(0);
  });
});
