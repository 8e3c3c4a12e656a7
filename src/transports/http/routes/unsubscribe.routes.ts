import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { UnsubscribeService } from '../../../modules/suppressions/unsubscribe.service.js';

/** A one-click POST's body is one short form field (RFC 8058 section 3.1); anything larger is no such request. */
export const UNSUBSCRIBE_BODY_LIMIT_BYTES = 16 * 1024;
/** No script, no style, no frame; the form posts back to this page's own URL. */
const PAGE_CSP = "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(reply: FastifyReply, title: string, body: string): FastifyReply {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex"><meta name="referrer" content="no-referrer"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;
  return reply
    .header('content-security-policy', PAGE_CSP)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .type('text/html; charset=utf-8')
    .send(html);
}

const wantsHtml = (request: FastifyRequest) => /text\/html/i.test(request.headers.accept ?? '');

const Params = Type.Object({ token: Type.String() });

/**
 * The one-click unsubscribe link of a message sent with `unsubscribe: true` (RFC 8058): no credential, no cookie.
 * GET shows a page whose button POSTs (link scanners and previews only GET, so a GET never unsubscribes); POST
 * unsubscribes, whatever its body (a mail provider sends `List-Unsubscribe=One-Click` form-encoded), idempotently.
 * A token that names nobody is a 404. Pages for mail recipients, not API calls: not in the OpenAPI document.
 */
export function unsubscribeRoutes({ unsubscribes }: { unsubscribes: UnsubscribeService }): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Any body at all is accepted and ignored (only its size is bounded): a malformed JSON or form body still unsubscribes.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: UNSUBSCRIBE_BODY_LIMIT_BYTES }, (_request, _body, done) => done(null, undefined));

    app.get('/u/:token', { schema: { hide: true, params: Params } }, async (request, reply) => {
      const who = await unsubscribes.resolve(request.params.token);
      return page(
        reply,
        'Unsubscribe',
        `<p>Stop mail from this sender to <b>${escapeHtml(who.recipient)}</b>?</p>` +
          '<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>',
      );
    });

    app.post('/u/:token', { schema: { hide: true, params: Params }, bodyLimit: UNSUBSCRIBE_BODY_LIMIT_BYTES }, async (request, reply) => {
      await unsubscribes.unsubscribe(request.params.token);
      if (wantsHtml(request)) return page(reply, 'Unsubscribed', '<p>You will get no more mail from this sender at this address.</p>');
      return reply.header('cache-control', 'no-store').send({ ok: true, unsubscribed: true });
    });
  };
}
