import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/lib/logger.js';
import { createHttpApp } from '../src/main.js';
import { LOGIN_FAILURE_LIMIT } from '../src/modules/tenancy/auth.service.js';
import { asWork } from '../src/db/tables.js';
import { createMaintenance } from '../src/modules/tenancy/maintenance.js';
import { createTenancyStore } from '../src/modules/tenancy/tenancy.store.js';
import { TEST_DIALECT } from './helpers/database.js';
import { createTenant, errorOf, login, startHarness, type Harness, type Tenant } from './helpers/harness.js';

const LIMIT = 5;

describe(`request limits count per resolved credential (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let other: Tenant;

  beforeAll(async () => {
    h = await startHarness({ MAILROOM_RATE_LIMIT_PER_MINUTE: String(LIMIT) });
    acme = await createTenant(h);
    other = await createTenant(h);
  });
  afterAll(async () => h.close());

  const get = (url: string, headers: Record<string, string>, remoteAddress = '127.0.0.1') =>
    h.app.inject({ method: 'GET', url, headers, remoteAddress });

  it('spellings of one API key share its bucket; a second key has its own', async () => {
    const spellings = [`Bearer ${acme.apiKey}`, `bearer ${acme.apiKey}`, `BEARER   ${acme.apiKey}`, `Bearer\t${acme.apiKey}  `, `bEaReR ${acme.apiKey} `];
    for (const [i, authorization] of spellings.entries()) {
      // Each from another address too: the bucket is the key's, not the address's.
      expect((await get('/mailboxes', { authorization }, `10.0.0.${i + 1}`)).statusCode, authorization).toBe(200);
    }
    for (const authorization of [`Bearer ${acme.apiKey}`, `Bearer  ${acme.apiKey}`, `bearer\t${acme.apiKey}`]) {
      const limited = await get('/mailboxes', { authorization }, '10.0.1.1');
      expect(errorOf(limited), authorization).toMatchObject({ status: 429, error: 'rate_limited' });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    }
    expect((await get('/mailboxes', { authorization: `Bearer ${other.apiKey}` }, '10.0.1.1')).statusCode).toBe(200);
  });

  it('spellings of one session token share its bucket', async () => {
    const token = await login(h, other.ownerEmail, other.password);
    const spellings = [token, ` ${token}`, `${token} `, `\t${token}`, `  ${token}  `];
    for (const spelling of spellings) {
      expect((await get('/app/api/session', { 'x-service-session': spelling }, '10.0.2.1')).statusCode).toBe(200);
    }
    expect(errorOf(await get('/app/api/session', { 'x-service-session': token }, '10.0.2.2'))).toMatchObject({ status: 429, error: 'rate_limited' });
  });

  it('invented credentials count against the client address, then answer 429 instead of 401', async () => {
    const address = '10.0.3.1';
    const invented = (): Array<Record<string, string>> => [
      { authorization: `Bearer mrk_${randomBytes(16).toString('hex')}` },
      { authorization: `Bearer ${randomBytes(8).toString('hex')}` },
      { authorization: `Basic ${randomBytes(8).toString('base64')}` },
      {},
    ];
    const statuses: number[] = [];
    for (let round = 0; round < 3; round += 1) {
      for (const headers of invented()) statuses.push((await get('/mailboxes', headers, address)).statusCode);
    }
    expect(statuses.slice(0, LIMIT)).toEqual(Array<number>(LIMIT).fill(401));
    expect(statuses.slice(LIMIT)).toEqual(Array<number>(statuses.length - LIMIT).fill(429));
    // Invented session and service tokens from there are refused the same way.
    expect((await get('/app/api/session', { 'x-service-session': `mrs_${randomBytes(16).toString('hex')}` }, address)).statusCode).toBe(429);
    expect((await get('/v1/transactional/messages/msg_x', { authorization: `Bearer mst_${randomBytes(16).toString('hex')}` }, address)).statusCode).toBe(429);
    // A working credential from that address still counts in its own bucket.
    const fresh = await createTenant(h);
    expect((await get('/mailboxes', { authorization: `Bearer ${fresh.apiKey}` }, address)).statusCode).toBe(200);
    // Another address is not affected.
    expect((await get('/mailboxes', {}, '10.0.3.2')).statusCode).toBe(401);
  });

  it.runIf(TEST_DIALECT === 'postgres')('api processes on one PostgreSQL share the counts', async () => {
    const second = await createHttpApp(h.config, h.services, createLogger('silent'));
    try {
      const fresh = await createTenant(h);
      const apps = [h.app, second];
      for (let i = 0; i < LIMIT; i += 1) {
        const res = await apps[i % 2]!.inject({ method: 'GET', url: '/mailboxes', headers: { authorization: `Bearer ${fresh.apiKey}` } });
        expect(res.statusCode).toBe(200);
      }
      for (const app of apps) {
        expect((await app.inject({ method: 'GET', url: '/mailboxes', headers: { authorization: `Bearer ${fresh.apiKey}` } })).statusCode).toBe(429);
      }
      // The maintenance sweep forgets counters once their window is long past.
      const maintenance = createMaintenance({ work: asWork(h.services.database.db), store: createTenancyStore({ dialect: h.services.database.dialect }), clock: h.clock, logger: createLogger('silent') });
      expect((await maintenance.sweep()).requestCounts).toBe(0);
      h.clock.advance(2 * 60 * 60_000);
      expect((await maintenance.sweep()).requestCounts).toBeGreaterThan(0);
    } finally {
      await second.close();
    }
  });

  it('unknown routes and login count against the client address', async () => {
    const address = '10.0.4.1';
    for (let i = 0; i < LIMIT; i += 1) expect((await get(`/no-such-route-${i}`, {}, address)).statusCode).toBe(404);
    expect(errorOf(await get('/no-such-route', {}, address))).toMatchObject({ status: 429, error: 'rate_limited' });
    const loginFrom = (remoteAddress: string) =>
      h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: `x${randomBytes(4).toString('hex')}@example.com`, password: 'x' }, remoteAddress });
    expect((await loginFrom(address)).statusCode).toBe(429);
    expect((await loginFrom('10.0.4.2')).statusCode).toBe(401);
  });
});

describe(`login throttling is atomic (${TEST_DIALECT})`, () => {
  let h: Harness;
  let victim: Tenant;

  beforeAll(async () => {
    h = await startHarness();
    victim = await createTenant(h, 'Victim');
  });
  afterAll(async () => h.close());

  it('40 concurrent wrong passwords for one email give at most 10 × 401, the rest 429 with Retry-After', async () => {
    const attempts = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: victim.ownerEmail, password: `wrong-${i}` } }),
      ),
    );
    const unauthorized = attempts.filter((r) => r.statusCode === 401);
    const limited = attempts.filter((r) => r.statusCode === 429);
    expect(unauthorized.length).toBeLessThanOrEqual(LOGIN_FAILURE_LIMIT);
    expect(unauthorized.length + limited.length).toBe(40);
    for (const res of limited) {
      expect(errorOf(res).error).toBe('too_many_login_attempts');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
    // Refused attempts checked no password and are not failures: the email locks after exactly 10 failures in all.
    let more = 0;
    for (;;) {
      const res = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: victim.ownerEmail, password: 'wrong' } });
      if (res.statusCode === 429) break;
      expect(res.statusCode).toBe(401);
      more += 1;
    }
    expect(unauthorized.length + more).toBe(LOGIN_FAILURE_LIMIT);
    // The right password is refused too while the lock holds.
    const right = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: victim.ownerEmail, password: victim.password } });
    expect(right.statusCode).toBe(429);
  });

  it('a success clears the failures it counted', async () => {
    const user = await createTenant(h, 'User');
    for (let i = 0; i < LOGIN_FAILURE_LIMIT - 1; i += 1) {
      const res = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: user.ownerEmail, password: 'wrong' } });
      expect(res.statusCode).toBe(401);
    }
    await login(h, user.ownerEmail, user.password);
    for (let i = 0; i < LOGIN_FAILURE_LIMIT; i += 1) {
      const res = await h.app.inject({ method: 'POST', url: '/app/api/login', payload: { email: user.ownerEmail, password: 'wrong' } });
      expect(res.statusCode).toBe(401);
    }
  });
});
