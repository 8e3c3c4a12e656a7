/**
 * What storing an inbound message costs the main thread, without SMTP: `inbound.deliver` called from this
 * process with 10 in flight (as 10 sessions would), on a fresh database of the test harness (SQLite, or
 * PostgreSQL with MAILROOM_DATABASE_URL). Prints messages a second and the event loop's busy time a message
 * (performance.eventLoopUtilization). Run it with --cpu-prof to see where that time goes.
 *
 *   node --import tsx bench/tools/ingest-cost.ts [messages, default 3000]
 */
import { performance } from 'node:perf_hooks';
import { createTenant } from '../../test/helpers/harness.js';
import { startMailHarness } from '../../test/helpers/mail.js';

const IN_FLIGHT = 10;
const WARM_UP = 300;
const total = Number(process.argv[2] ?? 3000);
const address = 'box@mailroom.localhost';

const h = await startMailHarness();
const tenant = await createTenant(h);
const created = await h.app.inject({ method: 'POST', url: '/mailboxes', headers: { authorization: `Bearer ${tenant.apiKey}` }, payload: { address } });
if (created.statusCode !== 201) throw new Error(`POST /mailboxes answered ${created.statusCode}: ${created.body}`);

// About 10 KB of plain text, as the smtp suite's smtp-source sends.
const body = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.\r\n'.repeat(100);
const raw = (i: number) => Buffer.from(`From: a@sender.test\r\nTo: ${address}\r\nSubject: test ${i}\r\nMessage-ID: <m${i}@sender.test>\r\nDate: Tue, 01 Dec 2026 10:00:00 +0000\r\n\r\n${body}`);
const envelope = { mailFrom: 'a@sender.test', remoteIp: '127.0.0.1', helo: 'sender.test' };

// Numbered across both runs, so that no timed message repeats a warm-up one's Message-ID (it would join its thread).
let numbered = 0;

async function deliver(count: number): Promise<void> {
  const end = numbered + count;
  const session = async () => {
    while (numbered < end) {
      const i = numbered++;
      const verdict = await h.services.inbound.checkRecipient(address, envelope);
      if (!verdict.ok) throw new Error(`recipient refused: ${verdict.detail}`);
      await h.services.inbound.deliver(raw(i), envelope, [verdict.recipient]);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, session));
}

await deliver(WARM_UP);
const before = performance.eventLoopUtilization();
const started = performance.now();
await deliver(total);
const loop = performance.eventLoopUtilization(before);
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({ messages: total, msgPerS: Math.round(total / seconds), busyUsPerMsg: Math.round((loop.active * 1000) / total), utilization: Number(loop.utilization.toFixed(2)) }));
await h.smtp.close();
await h.close();
