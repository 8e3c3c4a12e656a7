import { describe, expect, it } from 'vitest';
import { createByteBudget, createFairByteBudget, type Release } from './byte-budget.js';

describe('byte budget', () => {
  it('holds at most its total, grants in arrival order, and lets an oversized request run alone', async () => {
    const budget = createByteBudget(100);
    const first = await budget.acquire(60);
    const order: string[] = [];
    const big = budget.acquire(500).then((release) => {
      order.push('big');
      return release;
    });
    const small = budget.acquire(10).then((release) => {
      order.push('small');
      return release;
    });
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]); // the small one waits behind the big one, though it would fit
    expect(budget.held).toBe(60);
    first();
    first(); // a second release gives back nothing
    const releaseBig = await big;
    expect(budget.held).toBe(100);
    releaseBig();
    (await small)();
    expect(order).toEqual(['big', 'small']);
    expect(budget.held).toBe(0);
  });

  it('shares its total fairly across keys: a key past its share waits alone, the others take turns', async () => {
    const budget = createFairByteBudget({ totalBytes: 100, perKeyBytes: 60 });
    const order: string[] = [];
    const take = (key: string, bytes: number, waitMs = 10_000) =>
      budget.acquire(key, bytes, waitMs).then((release) => {
        order.push(`${key}${bytes}`);
        return release;
      });
    const f1 = (await take('f', 50))!;
    const f2 = take('f', 50); // past f's share: waits for f alone
    const g1 = (await take('g', 40))!; // g still fits the total
    expect(order).toEqual(['f50', 'g40']);
    const g2 = take('g', 20); // within g's share, but not the total (90 held): waits
    const h1 = take('h', 5); // fits, but g's head is first in the round: no overtaking
    await new Promise((r) => setImmediate(r));
    expect(budget.waiting).toBe(3);
    f1(); // 40 held: f's next (50) fits, then g's (20) would not: the round ends
    (await f2)!();
    (await g2)!();
    (await h1)!();
    g1();
    expect(order).toEqual(['f50', 'g40', 'f50', 'g20', 'h5']);
    expect(budget.held).toBe(0);
  });

  it('gives up a wait past its time, and the queue goes on without it', async () => {
    const budget = createFairByteBudget({ totalBytes: 10, perKeyBytes: 10 });
    const first = (await budget.acquire('f', 10, 1000))!;
    expect(await budget.acquire('g', 10, 20)).toBeNull();
    expect(budget.waiting).toBe(0);
    const later: Promise<Release | null> = budget.acquire('g', 4, 10_000);
    first();
    (await later)!();
    expect(budget.held).toBe(0);
  });
});
