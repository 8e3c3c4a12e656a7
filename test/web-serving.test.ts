import Fastify from 'fastify';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerWebApp, WEB_CSP } from '../src/transports/http/web.js';
import { TEST_DIALECT } from './helpers/database.js';
import { bearer, createTenant, startHarness, type Harness, type Tenant } from './helpers/harness.js';

const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

/** The CSP's directives by name. */
function directives(csp: string): Map<string, string> {
  return new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name = '', ...values]) => [name, values.join(' ')]));
}

describe(`serving the web app (${TEST_DIALECT})`, () => {
  let h: Harness;
  let acme: Tenant;
  let index: string;

  beforeAll(async () => {
    h = await startHarness();
    acme = await createTenant(h);
    // npm test builds before it runs: the app is the real build in dist/web.
    index = readFileSync(new URL('../dist/web/index.html', import.meta.url), 'utf8');
  });
  afterAll(async () => {
    await h.close();
  });

  it('answers / with index.html, not cached, under a strict CSP', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/', headers: HTML });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.body).toBe(index);
    const csp = directives(String(res.headers['content-security-policy']));
    expect(csp.get('script-src')).toBe("'self'");
    expect(csp.get('object-src')).toBe("'none'");
    expect(csp.get('base-uri')).toBe("'none'");
    expect(csp.get('frame-ancestors')).toBe("'none'");
    expect(csp.get('connect-src')).toBe("'self'");
    expect(String(res.headers['content-security-policy'])).not.toMatch(/unsafe-eval|script-src[^;]*unsafe-inline/);
    expect(res.headers['content-security-policy']).toBe(WEB_CSP);
  });

  it('serves the hashed assets index.html names, cached for a year and immutable', async () => {
    const assets = [...index.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.svg'))).toBe(true);
    const types: Record<string, RegExp> = { js: /javascript/, css: /text\/css/, svg: /image\/svg\+xml/ };
    for (const asset of assets) {
      const res = await h.app.inject({ method: 'GET', url: asset });
      expect(res.statusCode, asset).toBe(200);
      expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(res.headers['content-type'], asset).toMatch(types[asset.slice(asset.lastIndexOf('.') + 1)] ?? /^$/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('answers index.html for the app\'s own page paths, on GET and HEAD, when the browser asks for HTML', async () => {
    for (const url of ['/login', '/mail', '/mail/support%40mailroom.localhost/inbox', '/mail/a%40b.c/spam/msg_x?q=from%3Aalice', '/anything/else']) {
      const res = await h.app.inject({ method: 'GET', url, headers: HTML });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toBe(index);
      expect(res.headers['content-security-policy']).toBe(WEB_CSP);
    }
    const head = await h.app.inject({ method: 'HEAD', url: '/mail', headers: HTML });
    expect(head.statusCode).toBe(200);
  });

  it('keeps every API path JSON, whatever the Accept header says', async () => {
    const cases: Array<[string, string, number, string]> = [
      ['GET', '/app/api/nothing-here', 404, 'not_found'],
      ['GET', '/app/api/session', 401, 'missing_credential'],
      ['GET', '/inbox', 401, 'missing_credential'],
      ['GET', '/messages', 404, 'not_found'],
      ['GET', '/messages/msg_x/nothing', 404, 'not_found'],
      ['GET', '/mailboxes', 401, 'missing_credential'],
      ['GET', '/threads', 401, 'missing_credential'],
      ['GET', '/stats', 401, 'missing_credential'],
      ['GET', '/send', 404, 'not_found'],
      ['GET', '/v1/transactional/nothing', 404, 'not_found'],
      ['GET', '/v1/other', 404, 'not_found'],
      ['GET', '/assets/missing-0000.js', 404, 'not_found'],
      ['POST', '/mail', 404, 'not_found'],
    ];
    for (const [method, url, status, error] of cases) {
      const res = await h.app.inject({ method: method as 'GET' | 'POST', url, headers: HTML });
      expect(res.statusCode, `${method} ${url}`).toBe(status);
      expect(res.headers['content-type'], `${method} ${url}`).toMatch(/^application\/json/);
      expect(res.json<{ error: string }>().error, `${method} ${url}`).toBe(error);
    }
    const health = await h.app.inject({ method: 'GET', url: '/health', headers: HTML });
    expect(health.json()).toEqual({ ok: true, database: 'ok' });
    const openapi = await h.app.inject({ method: 'GET', url: '/openapi.json', headers: HTML });
    expect(openapi.json<{ openapi: string }>().openapi).toBe('3.1.0');
    expect(Object.keys(openapi.json<{ paths: object }>().paths)).not.toContain('/');
  });

  it('answers JSON 404 for a path that is no route to a client that does not ask for HTML', async () => {
    for (const accept of [undefined, 'application/json', '*/*']) {
      const res = await h.app.inject({ method: 'GET', url: '/mail/x/inbox', headers: accept ? { accept } : {} });
      expect(res.statusCode).toBe(404);
      expect(res.json<{ error: string }>().error).toBe('not_found');
    }
  });

  it('leaves the API-key surface at the root as it was', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/mailboxes', headers: { ...bearer(acme.apiKey), ...HTML } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ mailboxes: [] });
  });
});

describe('serving the web app without a build', () => {
  it('says at / how to build it, and the API paths stay JSON', async () => {
    const app = Fastify();
    const page = await registerWebApp(app, '/nonexistent/mailroom-web');
    app.setNotFoundHandler(async (request, reply) => page(request, reply) ?? reply.code(404).send({ error: 'not_found' }));
    const root = await app.inject({ method: 'GET', url: '/', headers: HTML });
    expect(root.statusCode).toBe(200);
    expect(root.body).toContain('npm ci');
    expect(root.headers['content-security-policy']).toBe(WEB_CSP);
    const route = await app.inject({ method: 'GET', url: '/mail', headers: HTML });
    expect(route.body).toContain('npm run build');
    const asset = await app.inject({ method: 'GET', url: '/assets/index.js', headers: HTML });
    expect(asset.statusCode).toBe(404);
    await app.close();
  });
});
