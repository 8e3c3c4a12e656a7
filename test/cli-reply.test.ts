import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliUser, listen, type CliUser } from './helpers/cli-client.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const SUPPORT = 'helpdesk@mailroom.localhost';
const QUOTED = 'On Sat, 21 Nov 2026 07:17:12 GMT, Alice Example <alice@sender.test> wrote:\n> Hello,\n>\n> my order 1234 has not arrived.';

interface Message {
  message_id: string;
  folder: string;
  subject: string;
  thread_id: string;
  to: { address: string }[];
  cc: { address: string }[];
  text: string | null;
}
interface Draft {
  draft_id: string;
  to: string[];
  cc: string[];
  subject: string;
  body: string;
  in_reply_to: string | null;
}

/**
 * `mailroom messages reply|reply-all|forward` through the built CLI against a real server: the
 * editor opens on the answer filled in (an EDITOR script edits it), it is sent on save threaded to the original,
 * `--draft` keeps it, an unchanged or empty file sends nothing; and `mailroom help <cmd> <sub>`.
 */
describe(`mailroom messages reply, reply-all and forward (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let url: string;
  let acme: Tenant;
  let owner: CliUser;
  let original: string;
  let thread: string;
  const work = mkdtempSync(join(tmpdir(), 'mailroom-cli-reply-'));
  const seen = join(work, 'editor-saw.txt');

  /** An EDITOR that keeps a copy of what it was shown, then runs `script` on the file ($1). */
  function editor(name: string, script: string): string {
    const path = join(work, `${name}.sh`);
    writeFileSync(path, `#!/bin/sh\ncp "$1" "${seen}"\n${script}\n`);
    chmodSync(path, 0o755);
    return path;
  }
  const sentTotal = async (): Promise<number> => (await owner.json<{ total: number }>(['sent'])).total;
  const draftTotal = async (): Promise<number> => (await owner.json<{ total: number }>(['drafts'])).total;

  beforeAll(async () => {
    h = await startMailHarness();
    h.clock.set(Date.now());
    url = await listen(h.app);
    acme = await createTenant(h, 'Acme');
    expect((await h.app.inject({ method: 'POST', url: `/mailboxes?address=${SUPPORT}`, headers: bearer(acme.apiKey) })).statusCode).toBe(201);
    owner = cliUser(url);
    expect((await owner.login(acme.ownerEmail, acme.password)).code).toBe(0);
    const info = await h.send({
      from: 'Alice Example <alice@sender.test>',
      to: [SUPPORT, 'Bob <bob@sender.test>'],
      cc: 'carol@sender.test',
      replyTo: 'Help Desk <help@alice.test>',
      subject: 'Order 1234',
      text: 'Hello,\n\nmy order 1234 has not arrived.\n',
      messageId: '<order-1234@sender.test>',
      date: new Date('2026-11-21T07:17:12Z'),
    });
    original = /msg_[0-9a-z]{26}/.exec(info.response)![0];
    thread = (await owner.json<Message>(['messages', 'show', original])).thread_id;
  });
  afterAll(async () => h.close());

  it('reply opens the editor on Reply-To, Re: and the quoted original, and sends on save, threaded', async () => {
    // Types on the empty line below the header fields, as a user would.
    const write = editor('write-reply', `perl -0pi -e 's/\\n\\n\\n/\\n\\nThanks, it ships today.\\n/' "$1"`);
    const result = await owner.run(['messages', 'reply', original], { env: { EDITOR: write } });
    expect(result.stderr).toBe('');
    const id = /^(msg_[0-9a-z]{26}) is queued \(mailroom sent shows its delivery\)\n$/.exec(result.stdout)?.[1] ?? '';
    expect(id).not.toBe('');
    expect(readFileSync(seen, 'utf8')).toBe(
      'To: help@alice.test\nCc: \nBcc: \nSubject: Re: Order 1234\n' +
        `# From ${SUPPORT}. Write the body below the empty line. Lines starting with # above it\n` +
        '# are ignored. Separate addresses with commas. An empty or unchanged file sends nothing.\n\n' +
        `\n\n${QUOTED}`,
    );

    const sent = await owner.json<Message>(['messages', 'show', id]);
    expect(sent).toMatchObject({ folder: 'sent', subject: 'Re: Order 1234', thread_id: thread, to: [{ address: 'help@alice.test' }], cc: [] });
    expect(sent.text).toBe(`Thanks, it ships today.\n\n${QUOTED}`);
    const raw = await owner.run(['messages', 'raw', id]);
    expect(raw.stdout).toMatch(/^In-Reply-To: <order-1234@sender\.test>\r?$/m);
    expect(raw.stdout).toMatch(/^References: <order-1234@sender\.test>\r?$/m);
    expect(await draftTotal()).toBe(0);

    // `messages show` of the copy in sent shows its delivery, recipient by recipient.
    const shown = await owner.run(['messages', 'show', id]);
    expect(shown.stdout).toMatch(/^Delivery +queued$/m);
    expect(shown.stdout).toMatch(/^Recipients\n +RECIPIENT +STATUS +LAST REPLY\n +help@alice\.test +pending *$/m);

    // Replying to one's own message goes to whom it went to.
    const again = await owner.json<Draft>(['messages', 'reply', id, '--draft', '--no-edit']);
    expect(again).toMatchObject({ to: ['help@alice.test'], subject: 'Re: Order 1234', in_reply_to: id });
    await owner.run(['drafts', 'delete', again.draft_id]);
  });

  it('reply-all adds To and Cc but the mailbox; --body sends without the editor; --draft keeps it', async () => {
    const draft = await owner.json<Draft>(['messages', 'reply-all', original, '--body', 'Noted.', '--cc', 'dave@example.com', '--draft']);
    expect(draft).toMatchObject({ to: ['help@alice.test', 'bob@sender.test'], cc: ['carol@sender.test', 'dave@example.com'], subject: 'Re: Order 1234', in_reply_to: original, body: `Noted.\n\n${QUOTED}` });
    const human = await owner.run(['messages', 'reply-all', original, '--no-edit', '--no-quote', '--draft', '--subject', 'Re: Re: Order 1234']);
    const second = /^saved draft (drf_[0-9a-z]{26}) \(mailroom drafts send drf_[0-9a-z]{26} sends it\)\n$/.exec(human.stdout)?.[1] ?? '';
    expect(await owner.json<Draft>(['drafts', 'show', second])).toMatchObject({ subject: 'Re: Re: Order 1234', body: '' });
    expect(await draftTotal()).toBe(2);

    const before = await sentTotal();
    const sent = await owner.json<{ message_id: string; status: string }>(['messages', 'reply-all', original, '--body-file', '-'], { input: 'From standard input.\n' });
    expect(sent.status).toBe('queued');
    expect(await owner.json<Message>(['messages', 'show', sent.message_id])).toMatchObject({ thread_id: thread, to: [{ address: 'help@alice.test' }, { address: 'bob@sender.test' }], cc: [{ address: 'carol@sender.test' }] });
    expect(await sentTotal()).toBe(before + 1);
  });

  it('forward opens on Fwd: and the original under its fields; the To: line is the user\'s to fill', async () => {
    const write = editor('write-forward', `sed -i 's/^To: $/To: Dave@Example.com/' "$1"`);
    const result = await owner.run(['messages', 'forward', original], { env: { VISUAL: write, EDITOR: 'false' } });
    expect(result.stderr).toBe('');
    const id = /^(msg_[0-9a-z]{26}) is queued/.exec(result.stdout)?.[1] ?? '';
    const shown = readFileSync(seen, 'utf8');
    expect(shown).toMatch(/^To: \nCc: \nBcc: \nSubject: Fwd: Order 1234\n/);
    expect(shown.slice(shown.indexOf('\n\n\n\n') + 4)).toBe(
      '---------- Forwarded message ---------\nFrom: Alice Example <alice@sender.test>\nDate: Sat, 21 Nov 2026 07:17:12 GMT\nSubject: Order 1234\n' +
        `To: ${SUPPORT}, Bob <bob@sender.test>\nCc: carol@sender.test\n\nHello,\n\nmy order 1234 has not arrived.`,
    );
    expect(await owner.json<Message>(['messages', 'show', id])).toMatchObject({ subject: 'Fwd: Order 1234', to: [{ address: 'dave@example.com' }], thread_id: thread });

    // A forward needs someone to go to.
    const before = await sentTotal();
    const nobody = await owner.run(['messages', 'forward', original, '--no-edit']);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toBe('error: give at least one recipient (--to); nothing was sent\n');
    const unfilled = await owner.run(['messages', 'forward', original], { env: { EDITOR: editor('add-text', `sed -i '$ a more' "$1"`) } });
    expect(unfilled.stderr).toBe('error: give at least one recipient (the To: line); nothing was sent\n');
    expect(await sentTotal()).toBe(before);
  });

  it('an unchanged or empty file, a failing editor or a message not ours sends nothing', async () => {
    const [sentBefore, draftsBefore] = [await sentTotal(), await draftTotal()];
    const unchanged = await owner.run(['messages', 'reply', original], { env: { EDITOR: 'true' } });
    expect(unchanged.code).toBe(1);
    expect(unchanged.stderr).toBe('error: the message was left unchanged; nothing was sent\n');
    expect((await owner.run(['messages', 'reply', original, '--draft'], { env: { EDITOR: 'true' } })).stderr).toBe('error: the message was left unchanged; nothing was saved\n');
    expect((await owner.run(['messages', 'reply-all', original], { env: { EDITOR: ': >' } })).stderr).toBe('error: the message is empty; nothing was sent\n');
    expect((await owner.run(['messages', 'forward', original], { env: { EDITOR: 'false' } })).stderr).toBe("error: the editor 'false' exited with 1; nothing was saved\n");
    expect((await owner.run(['messages', 'reply', original, '--body', 'x', '--no-edit', '-e'])).stderr).toMatch(/cannot be used with option '-e, --editor'/);

    const other = await createTenant(h, 'Other');
    const stranger = cliUser(url);
    expect((await stranger.login(other.ownerEmail, other.password)).code).toBe(0);
    const foreign = await stranger.run(['messages', 'reply', original, '--body', 'hi']);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toBe(`error: 404 message_not_found: no message ${original}\n`);
    expect([await sentTotal(), await draftTotal()]).toEqual([sentBefore, draftsBefore]);
  });

  it('mailroom help <command> <subcommand> shows the subcommand\'s help', async () => {
    const help = await owner.run(['help', 'messages', 'reply']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: mailroom messages reply \[options\] <message_id>\n/);
    expect(help.stdout).toContain('--no-edit');
    expect(help.stdout).toContain('$ mailroom messages reply msg_');
    expect((await owner.run(['help', 'messages'])).stdout).toMatch(/^Usage: mailroom messages \[options\] \[command\]\n/);
    expect((await owner.run(['help', 'keys', 'create'])).stdout).toMatch(/^Usage: mailroom keys create /);
    expect((await owner.run(['help'])).stdout).toMatch(/^Usage: mailroom \[options\] \[command\]\n/);
    const unknown = await owner.run(['help', 'messages', 'nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("error: unknown command 'nope' (mailroom messages --help lists them)\n");
  });
});
