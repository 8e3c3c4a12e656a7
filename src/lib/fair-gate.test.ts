import { describe, expect, it } from 'vitest';
import { createFairGate, GateFull } from './fair-gate.js';

const turn = () => new Promise((r) => setImmediate(r));

describe('fair gate', () => {
  it('caps each key and the total, and gives back a slot only once', async () => {
    const gate = createFairGate({ total: 3, perKey: 2 });
    const a1 = gate.tryAcquire('a')!;
    gate.tryAcquire('a');
    expect(gate.tryAcquire('a')).toBeNull(); // a's share is 2
    gate.tryAcquire('b');
    expect(gate.tryAcquire('c')).toBeNull(); // 3 in all
    expect(gate.active).toBe(3);
    a1();
    a1();
    expect(gate.active).toBe(2);
    expect(gate.activeFor('a')).toBe(1);
  });

  it('grants waiting requests round-robin across keys, not in arrival order', async () => {
    const gate = createFairGate({ total: 1, perKey: 1 });
    const first = gate.tryAcquire('a')!;
    const order: string[] = [];
    // Each grant is given back on the next turn, so the next waiter is chosen by the gate alone.
    const wait = (key: string) =>
      gate.acquire(key).then(async (release) => {
        order.push(key);
        await turn();
        release();
      });
    const pending = [wait('a'), wait('a'), wait('a'), wait('b'), wait('c')];
    expect(gate.waiting).toBe(5);
    first();
    await Promise.all(pending);
    expect(order).toEqual(['a', 'b', 'c', 'a', 'a']);
  });

  it('never lets a key that holds its share take a slot ahead of another waiting key', async () => {
    const gate = createFairGate({ total: 2, perKey: 1 });
    const a = gate.tryAcquire('a')!;
    const b = gate.tryAcquire('b')!;
    const order: string[] = [];
    void gate.acquire('a').then(() => order.push('a'));
    void gate.acquire('c').then(() => order.push('c'));
    b(); // a still holds its one slot: c goes first
    await turn();
    expect(order).toEqual(['c']);
    a();
    await turn();
    expect(order).toEqual(['c', 'a']);
  });

  it('refuses at once past the waiting limits, naming the scope', async () => {
    const gate = createFairGate({ total: 1, perKey: 1, maxWaitingPerKey: 1, maxWaiting: 2 });
    gate.tryAcquire('a');
    void gate.acquire('a');
    await expect(gate.acquire('a')).rejects.toMatchObject({ scope: 'key', key: 'a' });
    void gate.acquire('b');
    const full = await gate.acquire('c').catch((err: unknown) => err);
    expect(full).toBeInstanceOf(GateFull);
    expect((full as GateFull).scope).toBe('total');
    expect(gate.waitingFor('a')).toBe(1);
  });
});
