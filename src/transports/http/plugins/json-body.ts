import type { FastifyBodyParser, FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from '../../../lib/logger.js';
import { asBuffer, createThreadPool } from '../../../lib/thread-pool.js';
import { keepDecoded } from '../../../modules/sending/attachments.js';
import { decodeJsonBody, type DecodedBody, type JsonParse } from './json-decode.js';

/**
 * A JSON body above this is parsed (and its attachments decoded) on a JSON body thread; a smaller one where it
 * arrived, as before: a thread hop costs more than parsing it. A 25 MiB send's parse and base64 were most of
 * the main thread's time for it (decision 393).
 */
export const THREADED_JSON_BYTES = 256 * 1024;

/** Fastify's default JSON parser as a function that returns the value or throws its error (which carries a `code`). */
export function strictJson(parser: FastifyBodyParser<string>): JsonParse {
  return (text) => {
    let outcome: { err: Error | null; value: unknown } | null = null;
    // The default parser answers through `done`, at once; it reads nothing of the request.
    const done = (err: Error | null, value?: unknown) => void (outcome = { err, value });
    void (parser as (request: FastifyRequest | null, body: string, done: (err: Error | null, value?: unknown) => void) => void)(null, text, done);
    const settled = outcome as { err: Error | null; value: unknown } | null;
    if (settled === null) throw Object.assign(new Error('the JSON parser did not answer'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY' });
    if (settled.err) throw settled.err;
    return settled.value;
  };
}

/** The Fastify error a failed parse on a thread stood for (structured clone keeps no `code`): 400, as the errors plugin maps it. */
function parseError(code: string): Error {
  return Object.assign(new Error(code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'the body is empty' : 'the body is not valid JSON'), { code, statusCode: 400 });
}

/** The body as the route takes it: the parsed value, with each decoded attachment's bytes kept by its object. */
function revived(outcome: DecodedBody): unknown {
  if (!outcome.ok) throw parseError(outcome.code);
  const value = outcome.value as { attachments?: object[]; messages?: Array<{ attachments?: object[] }> };
  for (const { message, index, bytes } of outcome.decoded) {
    const list = message === null ? value.attachments : value.messages?.[message]?.attachments;
    const attachment = list?.[index];
    if (attachment) keepDecoded(attachment, asBuffer(bytes));
  }
  return outcome.value;
}

/**
 * `application/json` for every route: small bodies parsed in place with Fastify's own parser, large ones (sends
 * with attachments, batches) on a pool of threads that also decodes their attachments' base64, so a 40 MiB body
 * holds the thread answering every workspace's requests for a copy, not for its parse. `threads` 0: in place.
 */
export function registerJsonBodies(app: FastifyInstance, options: { threads: number; logger: Logger }): void {
  const parse = strictJson(app.getDefaultJsonParser('error', 'error'));
  const pool =
    options.threads === 0
      ? null
      : createThreadPool<Uint8Array, DecodedBody>({
          near: import.meta.url,
          worker: 'json-body.worker',
          threads: options.threads,
          tasksPerThread: 1,
          what: 'JSON body',
          logger: options.logger,
          inProcess: (body) => Promise.resolve(decodeJsonBody(body, parse)),
        });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, async (_request: FastifyRequest, body: Buffer) => {
    if (pool === null || body.length <= THREADED_JSON_BYTES) return parse(body.toString('utf8'));
    // Shared memory: the thread reads the body where it is instead of being sent a copy of it.
    const shared = new Uint8Array(new SharedArrayBuffer(body.length));
    shared.set(body);
    return revived(await pool.run(shared));
  });
  app.addHook('onClose', async () => pool?.close());
}
