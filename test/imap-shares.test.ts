import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { ImapLines } from './helpers/imap-lines.js';
import { startImapService, type RunningImapService } from './helpers/imap-service.js';

// Each workspace's share of the IMAP process, as configured (MAILROOM_IMAP_COMMANDS 2 in all, 1 per workspace;
// MAILROOM_IMAP_MAX_CLIENTS_PER_WORKSPACE 3), between two workspaces. A's first session runs a FETCH larger than the
// sockets' buffers and stops reading, so that command holds A's one turn for as long as the test wants: A's next
// command must wait behind it, while B, another workspace, still has its commands answered. Counted by what each
// client has received, never by time.

const HEAVY = 'heavy@mailroom.localhost';
const LIGHT = 'light@mailroom.localhost';
/** 8 messages of 4 MiB: 32 MiB of FETCH answer, well past what loopback sockets buffer between them. */
const MESSAGE_BYTES = 4 * 1024 * 1024;

describe(`IMAP shares per workspace (${TEST_DIALECT})`, { timeout: 180_000 }, () => {
  let service: RunningImapService;
  let port: number;
  const clients: ImapLines[] = [];

  beforeAll(async () => {
    service = await startImapService({ MAILROOM_IMAP_COMMANDS: '2', MAILROOM_IMAP_COMMANDS_PER_WORKSPACE: '1', MAILROOM_IMAP_MAX_CLIENTS_PER_WORKSPACE: '3' }, [HEAVY, LIGHT]);
    port = service.running.imapPort!;
  }, 90_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    await service?.stop();
  });

  const open = async (): Promise<ImapLines> => {
    const client = await ImapLines.open(port);
    clients.push(client);
    return client;
  };
  const loginAs = async (address: string): Promise<{ client: ImapLines; answer: string }> => {
    const client = await open();
    const answer = (await client.command(`LOGIN ${address} "${service.accounts.get(address)!.password}"`)).at(-1)!;
    return { client, answer };
  };
  const loggedIn = async (address: string): Promise<ImapLines> => {
    const { client, answer } = await loginAs(address);
    expect(answer).toMatch(/^t\d+ OK/);
    return client;
  };

  /** Logged in once the workspace has a place again (the server hears closed sessions on its own time). */
  const loggedInOnceFree = async (address: string): Promise<ImapLines> => {
    for (;;) {
      const { client, answer } = await loginAs(address);
      if (/^t\d+ OK/.test(answer)) return client;
      expect(answer).toMatch(/^t\d+ NO \[UNAVAILABLE\] /);
      client.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it("refuses a workspace's session past its share while another workspace logs in", async () => {
    const heavy = [await loggedIn(HEAVY), await loggedIn(HEAVY), await loggedIn(HEAVY)];
    expect((await loginAs(HEAVY)).answer).toMatch(/^t\d+ NO \[UNAVAILABLE\] /);
    await loggedIn(LIGHT);
    // A session that ends gives its place back.
    heavy[0]!.close();
    await loggedInOnceFree(HEAVY);
    for (const c of clients.splice(0)) c.close();
  });

  it("answers B's commands while A's wait behind A's one running command", async () => {
    const a1 = await loggedInOnceFree(HEAVY);
    const body = `${'x'.repeat(998)}\r\n`.repeat(MESSAGE_BYTES / 1000);
    const raw = `From: <sender@sender.test>\r\nTo: <${HEAVY}>\r\nSubject: Heavy\r\n\r\n${body}`;
    const tag = a1.nextTag();
    a1.send(`${tag} APPEND INBOX {${raw.length}+}`);
    a1.send(raw);
    expect((await a1.waitFor(new RegExp(`^${tag} `))).at(-1)).toMatch(/OK/);
    expect((await a1.command('SELECT INBOX')).at(-1)).toMatch(/OK/);
    for (let i = 0; i < 3; i++) {
      expect((await a1.command('COPY 1:* INBOX')).at(-1)).toMatch(/OK/);
      // The copies join the session's view at its next sync.
      await a1.command('NOOP');
    }
    expect(await a1.command('SEARCH ALL')).toContain('* SEARCH 1 2 3 4 5 6 7 8');
    const a2 = await loggedInOnceFree(HEAVY);
    expect((await a2.command('SELECT INBOX')).at(-1)).toMatch(/OK/);

    // A1's FETCH starts (its first literal arrives), then A1 reads no more: it holds A's turn.
    a1.send('f1 FETCH 1:* (BODY.PEEK[])');
    await a1.waitFor(/^\* 1 FETCH \(/, 60_000);
    a1.pause();
    a2.send('n1 NOOP');

    // B logs in, selects and fetches: every answer comes, the total having a turn left.
    const b = await loggedIn(LIGHT);
    expect((await b.command('SELECT INBOX')).at(-1)).toMatch(/OK/);
    expect((await b.command('UID FETCH 1:* (FLAGS)')).at(-1)).toMatch(/^t\d+ OK/);
    expect((await b.command('NOOP')).at(-1)).toMatch(/^t\d+ OK/);
    // A's second command is still waiting for A's turn.
    expect(a2.holds(/^n1 /)).toBe(false);

    // A1 reads again: its FETCH ends, then A2's NOOP gets the turn.
    a1.resume();
    expect((await a1.waitFor(/^f1 /, 120_000)).at(-1)).toBe('f1 OK Fetch completed.');
    expect((await a2.waitFor(/^n1 /, 60_000)).at(-1)).toMatch(/^n1 OK/);
  });
});
