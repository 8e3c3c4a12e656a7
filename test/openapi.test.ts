import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import swagger from '@fastify/swagger';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SDK_TYPES_FILE, renderSdkTypes } from '../scripts/openapi-document.js';
import { documentSecurity, openApiOptions } from '../src/transports/http/openapi.js';
import { TEST_DIALECT } from './helpers/database.js';
import { startHarness, type Harness } from './helpers/harness.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REDOCLY = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
const run = promisify(execFile);

interface Problem {
  ruleId: string;
  severity: string;
  message: string;
  location: Array<{ source: { ref: string }; pointer: string }>;
}
type Document = { paths: Record<string, Record<string, Record<string, unknown> & { responses: Record<string, Record<string, unknown>> }>> };

/** `redocly lint` with the committed redocly.yaml over the given documents, in one run: each one's problems, errors and warnings alike. */
async function lint(documents: Record<string, object>): Promise<Record<string, Problem[]>> {
  const dir = mkdtempSync(join(tmpdir(), 'mailroom-lint-'));
  try {
    const files = Object.entries(documents).map(([name, doc]) => {
      writeFileSync(join(dir, name), JSON.stringify(doc));
      return name;
    });
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    const args = [REDOCLY, 'lint', '--config', join(ROOT, 'redocly.yaml'), '--format=json', ...files];
    // It exits 1 when it finds an error; its report is on stdout either way.
    const { stdout } = await run(process.execPath, args, { cwd: dir, env, maxBuffer: 64 * 1024 * 1024 }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
    // One report per document, in order, one after the other.
    const reports = stdout.split(/(?<=\})\s*(?=\{\s*"totals")/).map((text) => (JSON.parse(text) as { problems: Problem[] }).problems);
    expect(reports).toHaveLength(files.length);
    return Object.fromEntries(files.map((name, i) => [name, reports[i]!]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const summary = (p: Problem) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`;

describe(`/openapi.json (${TEST_DIALECT})`, () => {
  let h: Harness;
  let document: Document;

  beforeAll(async () => {
    // With the sandbox's routes, as `npm run sdk` builds the document: they are linted and typed like the others.
    h = await startHarness({}, { sandbox: true });
    const answer = await h.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(answer.statusCode).toBe(200);
    document = answer.json<Document>();
  });
  afterAll(async () => {
    await h.close();
  });

  it('passes `redocly lint` under redocly.yaml with no error and no warning; the lint refuses what a route must not lack', async () => {
    const broken = structuredClone(document);
    delete broken.paths['/inbox']!.get!.operationId;
    delete broken.paths['/stats']!.get!.summary;
    broken.paths['/threads']!.get!.responses['200']!.description = 'Default Response';
    delete broken.paths['/health']!.get!.security;
    broken.paths['/app/api/drafts']!.get!.operationId = 'list_drafts';
    delete broken.paths['/app/api/members']!.get!.tags;

    const problems = await lint({ 'openapi.json': document, 'broken.json': broken });
    expect(problems['openapi.json']!.map(summary)).toEqual([]);
    expect(new Set(problems['broken.json']!.map((p) => `${p.ruleId} ${p.location[0]?.pointer}`))).toEqual(
      new Set([
        'operation-operationId #/paths/~1inbox/get/operationId',
        'operation-summary #/paths/~1stats/get/summary',
        'rule/response-described #/paths/~1threads/get/responses/200/description',
        'security-defined #/paths/~1health/get',
        'rule/operation-id-camel-case #/paths/~1app~1api~1drafts/get/operationId',
        'rule/operation-tagged #/paths/~1app~1api~1members/get/tags',
      ]),
    );
    expect(problems['broken.json']!.every((p) => p.severity === 'error')).toBe(true);
  });

  it('the committed SDK types (src/sdk/openapi.d.ts) are those of the live document: run `npm run sdk` after changing a route', async () => {
    const live = await renderSdkTypes(document);
    const committed = readFileSync(SDK_TYPES_FILE, 'utf8');
    // A plain comparison would print 140 KB; the first line that differs says what changed.
    const liveLines = live.split('\n');
    const committedLines = committed.split('\n');
    const first = liveLines.findIndex((line, i) => line !== committedLines[i]);
    expect(first === -1 && liveLines.length === committedLines.length ? 'same' : `differs from line ${first + 1}: ${liveLines[first] ?? '(end)'}`).toBe('same');
  });

  it('every 4xx and default answer is one of the shared ones, with the {error, detail} body', () => {
    const refs = new Set<string>();
    for (const item of Object.values(document.paths)) {
      for (const operation of Object.values(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          // 5xx answers of their own (GET /health's 503) keep their own body.
          if (/^(4|default)/.test(status)) refs.add(`${status} ${String(response.$ref)}`);
        }
      }
    }
    expect([...refs].every((r) => /^(\d{3}|default) #\/components\/responses\/\w+$/.test(r)), [...refs].join('\n')).toBe(true);
  });

  it('names the wildcard list entry {entry}, and a client that sends it percent-encoded reaches the route', async () => {
    const item = document.paths['/app/api/lists/{direction}/{list_type}/{entry}'];
    expect(Object.keys(item ?? {}).sort()).toEqual(['delete', 'get']);
    // Unauthenticated, so 401 (a missing route would be a 404): the encoded slash is routed like a raw one.
    const encoded = await h.app.inject({ method: 'GET', url: '/app/api/lists/inbound/block/203.0.113.0%2F24' });
    expect(encoded.statusCode).toBe(401);
  });
});

describe('documentSecurity', () => {
  async function appWith(stated: Array<Record<string, string[]>> | undefined): Promise<unknown> {
    const app = Fastify();
    await app.register(swagger, openApiOptions('0'));
    await app.register(async (scope) => {
      documentSecurity(scope, [{ session: [] }]);
      scope.get('/x', { schema: { operationId: 'x', summary: 'x', ...(stated === undefined ? {} : { security: stated }) } }, async () => ({}));
    });
    await app.ready();
    const doc = app.swagger() as unknown as Document;
    await app.close();
    return doc.paths['/x']?.get?.security;
  }

  it("documents a route with its surface's security, and refuses a route that states another", async () => {
    expect(await appWith(undefined)).toEqual([{ session: [] }]);
    expect(await appWith([{ session: [] }])).toEqual([{ session: [] }]);
    await expect(appWith([{ apiKey: [] }])).rejects.toThrow(/states security .*apiKey.* but its surface checks .*session/);
  });
});
