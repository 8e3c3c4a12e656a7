import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, errorOf, login, session, startHarness, type Harness, type Tenant } from './helpers/harness.js';

// A credential sent to the wrong surface: the 401 says what it is and where it goes, told by its prefix.
describe(`a credential on the wrong surface is told where it goes (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let sessionToken: string;

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h, 'Acme');
    sessionToken = await login(h, acme.ownerEmail, acme.password);
  });
  afterAll(async () => h.close());

  it('a session token as Bearer on an API-key route gets 401 naming X-Service-Session', async () => {
    for (const url of ['/mailboxes', '/inbox', '/stats']) {
      const answer = errorOf(await h.app.inject({ method: 'GET', url, headers: bearer(sessionToken) }));
      expect(answer, url).toEqual({
        status: 401,
        error: 'invalid_credential',
        detail: 'this is a session token (mrs_…): send it as X-Service-Session: <session token> on the session routes (/app/api/…); this route takes an API key (mrk_…)',
      });
    }
    // The same token where the hint sends it works.
    expect((await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(sessionToken) })).statusCode).toBe(200);
    // And the API key on the same route still works: the hint is for the session prefix only.
    expect((await h.app.inject({ method: 'GET', url: '/mailboxes', headers: bearer(acme.apiKey) })).statusCode).toBe(200);
  });

  it('a session token as Bearer on a session route, without X-Service-Session, is told to move it', async () => {
    const answer = errorOf(await h.app.inject({ method: 'GET', url: '/app/api/session', headers: bearer(sessionToken) }));
    expect(answer).toEqual({
      status: 401,
      error: 'missing_credential',
      detail: 'send the session token as X-Service-Session: <session token>, not as Authorization: Bearer',
    });
    // Without any credential the answer is the usual one.
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/session' })).detail).toBe('send X-Service-Session: <session token> (POST /app/api/login gives one)');
  });

  it('an API key in X-Service-Session, and session or API credentials on the transactional surface, are told where they go', async () => {
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/app/api/session', headers: session(acme.apiKey) }))).toEqual({
      status: 401,
      error: 'invalid_session',
      detail: 'this is an API key (mrk_…): send it as Authorization: Bearer on the API-key routes (/mailboxes, /inbox, /messages/…, /send); this route takes a session token (mrs_…)',
    });
    const onTransactional = errorOf(await h.app.inject({ method: 'GET', url: '/v1/transactional/messages?idempotency_key=k', headers: bearer(sessionToken) }));
    expect(onTransactional).toMatchObject({ status: 401, error: 'invalid_credential' });
    expect(onTransactional.detail).toMatch(/^this is a session token \(mrs_…\): send it as X-Service-Session: .*; this route takes a service token \(mst_…\)$/);
    // A service token is told apart by its prefix alone: no lookup, so an unknown one gets the same hint.
    const serviceToken = errorOf(await h.app.inject({ method: 'GET', url: '/inbox', headers: bearer('mst_not-a-real-token') }));
    expect(serviceToken).toMatchObject({ status: 401, error: 'invalid_credential' });
    expect(serviceToken.detail).toBe('this is a service token (mst_…): send it as Authorization: Bearer on /v1/transactional/…; this route takes an API key (mrk_…)');
  });

  it('an unknown token of the right kind still gets the plain answer', async () => {
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/inbox', headers: bearer('mrk_unknown') }))).toEqual({ status: 401, error: 'invalid_credential', detail: 'the API key is not valid' });
    expect(errorOf(await h.app.inject({ method: 'GET', url: '/inbox', headers: bearer('no-prefix') }))).toEqual({ status: 401, error: 'invalid_credential', detail: 'the API key is not valid' });
  });
});
