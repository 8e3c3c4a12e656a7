import { describe, expect, it } from 'vitest';
import { createByteBudget } from './byte-budget.js';

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
});
