import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { createSearchStore } from '../src/modules/mail/search.store.js';
import { parseSearchQuery } from '../src/modules/messages/search-query.js';
import { searchTotals } from '../src/modules/messages/search.service.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, type Tenant } from './helpers/harness.js';
import { startMailHarness, type MailHarness } from './helpers/mail.js';

const OURS = 'count@mailroom.localhost';
const THEIRS = 'count-theirs@mailroom.localhost';
const day = (d: number) => Date.UTC(2026, 10, d, 12, 0, 0);

/**
 * A search's count: a page that ends before its limit is its own count; on PostgreSQL a query with words in a row
 * counts among the newest messages of the workspace only, and says its count is then a lower bound.
 */
describe(`search counts (${TEST_DIALECT})`, () => {
  let h: MailHarness;
  let acme: Tenant;
  let other: Tenant;
  const pg = TEST_DIALECT === 'postgres';
  const store = (phraseCountWindow: number) => createSearchStore({ dialect: h.services.database.dialect, phraseCountWindow });
  const search = (window: number, q: string, limit: number, offset = 0) =>
    store(window).searchMessages(asWork(h.services.database.db), acme.workspaceId, {}, parseSearchQuery(q), limit, offset);

  beforeAll(async () => {
    h = await startMailHarness();
    acme = await createTenant(h, 'Acme');
    other = await createTenant(h, 'Other');
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(acme.apiKey), payload: { address: OURS } })).statusCode).toBe(201);
    expect((await h.app.inject({ method: 'POST', url: '/mailboxes', headers: bearer(other.apiKey), payload: { address: THEIRS } })).statusCode).toBe(201);
    // Ours, oldest first: six with the phrase, then two with its words the other way round.
    for (let d = 1; d <= 8; d++) {
      h.clock.set(day(d));
      await h.send({ from: 'a@sender.test', to: OURS, subject: `Number ${d}`, text: d <= 6 ? 'the quarterly report is here' : 'a report, quarterly as ever' });
    }
    // Theirs, newest of all: the phrase again, which our counts must never see.
    for (let d = 9; d <= 11; d++) {
      h.clock.set(day(d));
      await h.send({ from: 'a@sender.test', to: THEIRS, subject: `Theirs ${d}`, text: 'the quarterly report is here' });
    }
  }, 60_000);
  afterAll(async () => h?.close());

  it('takes a page that ends before its limit as the whole count', async () => {
    const page = await search(4, '"quarterly report"', 10);
    expect(page.rows).toHaveLength(6);
    expect(page).toMatchObject({ total: 6, partial: false });
    expect(await search(4, '"quarterly report"', 10, 4)).toMatchObject({ total: 6, partial: false });
  });

  it('counts words in a row among the newest messages on PostgreSQL, every match elsewhere', async () => {
    const page = await search(4, '"quarterly report"', 2);
    expect(page.rows).toHaveLength(2);
    // A window of four looks at our newest five (the fifth tells that there are more): three of the six. Theirs,
    // newer still, are not in it at all.
    expect(page).toMatchObject(pg ? { total: 3, partial: true } : { total: 6, partial: false });
    expect(searchTotals(page, 2)).toEqual(pg ? { total: 3, total_capped: true } : { total: 6, total_capped: false });
    // An address's words are words in a row too; a whole sender address is no text at all, so counted exactly.
    expect(await search(4, 'from:sender.test', 2)).toMatchObject(pg ? { total: 5, partial: true } : { total: 8, partial: false });
    expect(await search(4, 'from:a@sender.test', 2)).toMatchObject({ total: 8, partial: false });
    // A window that holds every message counts them all, exactly.
    expect(await search(8, '"quarterly report"', 2)).toMatchObject({ total: 6, partial: false });
    // One word is counted through the index, exactly, whatever the window.
    expect(await search(4, 'quarterly', 2)).toMatchObject({ total: 8, partial: false });
  });

  it('answers a partial count as a lower bound no smaller than the page', () => {
    expect(searchTotals({ total: 1, partial: true }, 50)).toEqual({ total: 50, total_capped: true });
    expect(searchTotals({ total: 1001, partial: true }, 50)).toEqual({ total: 1000, total_capped: true });
    expect(searchTotals({ total: 1001, partial: false }, 50)).toEqual({ total: 1000, total_capped: true });
    expect(searchTotals({ total: 7, partial: false }, 7)).toEqual({ total: 7, total_capped: false });
  });

  it('answers the API with the count (every message within the window here)', async () => {
    const res = await h.app.inject({ method: 'GET', url: `/inbox?q=${encodeURIComponent('"quarterly report"')}&limit=2`, headers: bearer(acme.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ total: 6, total_capped: false, limit: 2, offset: 0 });
  });
});
