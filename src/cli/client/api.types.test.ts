import { describe, expectTypeOf, it } from 'vitest';
import type { ApiClient } from './http-client.js';

// Checked by the type checker (npm run typecheck), not at run time: the client's calls are typed by the API types
// generated from /openapi.json, so a path, a parameter or a field the server does not have fails the build.
declare const api: ApiClient;

describe('the API client is typed by the generated API types', () => {
  it("takes a path template with its placeholders, query and body, and answers the route's success schema", () => {
    const calls = async () => {
      const message = await api.get('/app/api/messages/{message_id}', { path: { message_id: 'msg_1' }, query: { mark_read: true } });
      expectTypeOf(message.subject).toEqualTypeOf<string>();
      const queued = await api.post('/app/api/send', { body: { from_mailbox: 'a@b.example', to: ['c@d.example'], subject: '', body: '' } });
      expectTypeOf(queued.status).toEqualTypeOf<'queued' | 'scheduled'>();
      await api.post('/app/api/logout');
      // @ts-expect-error a path the server does not have
      await api.get('/app/api/nothing');
      // @ts-expect-error the placeholder's value is required
      await api.get('/app/api/messages/{message_id}');
      // @ts-expect-error a field the route does not take
      await api.post('/app/api/send', { body: { from_mailbox: 'a@b.example', to: 'c@d.example', subject: '', body: '', colour: 'red' } });
      // @ts-expect-error a query value of the wrong type
      await api.get('/app/api/messages', { query: { limit: 'ten' } });
      // @ts-expect-error a required body left out
      await api.post('/app/api/drafts');
      // @ts-expect-error a folder the API does not have (its folders are an enum of the document)
      await api.post('/app/api/messages/{message_id}/move', { path: { message_id: 'msg_1' }, body: { folder: 'drafts' } });
      const hook = await api.get('/app/api/webhooks/{webhook_id}', { path: { webhook_id: 'whk_1' } });
      expectTypeOf(hook.event_types).items.toExtend<`${'message' | 'domain' | 'webhook'}.${string}`>();
      // @ts-expect-error a method the path does not have
      await api.patch('/app/api/session', { body: {} });
    };
    expectTypeOf(calls).toBeFunction();
  });
});
