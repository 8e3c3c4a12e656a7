import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asWork } from '../src/db/tables.js';
import { createRequestCounter } from '../src/modules/tenancy/request-counter.js';
import { createTenancyStore } from '../src/modules/tenancy/tenancy.store.js';
import { TEST_DIALECT } from './helpers/database.js';
import { startHarness, type Harness } from './helpers/harness.js';

describe(`request counts of concurrent requests go together (${TEST_DIALECT})`, () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  const counter = () => {
    const store = createTenancyStore({ dialect: h.services.database.dialect });
    let statements = 0;
    const counting = { addRequestCounts: (...args: Parameters<typeof store.addRequestCounts>) => (statements++, store.addRequestCounts(...args)) };
    return { count: createRequestCounter({ work: asWork(h.services.database.db), store: counting, clock: h.clock }), statements: () => statements };
  };

  it('gives every request of a burst its own count, as one statement per request would, in fewer statements', async () => {
    const { count, statements } = counter();
    const bucket = `test:${Math.random()}`;
    const burst = await Promise.all(Array.from({ length: 200 }, (_, i) => count(i % 2 === 0 ? bucket : `${bucket}:b`, 60_000)));
    const counts = (n: number) => burst.filter((_, i) => i % 2 === n).map((r) => r.hits).sort((a, b) => a - b);
    expect(counts(0)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(counts(1)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(statements()).toBeLessThan(20);
    // Two counters (two processes' worth) on one bucket still count every request once.
    const other = counter();
    const both = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? count : other.count)(bucket, 60_000)));
    expect(both.map((r) => r.hits).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 101));
    expect(burst.every((r) => r.resetInMs > 0 && r.resetInMs <= 60_000)).toBe(true);
  });
});
