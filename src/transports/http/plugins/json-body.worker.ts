/**
 * Entry of a JSON body thread (see json-body.ts): parses one large request body per task and decodes its
 * attachments. Runs in a worker thread only.
 */
import Fastify from 'fastify';
import { strictJson } from './json-body.js';
import { decodeJsonBody, type DecodedBody } from './json-decode.js';

// The same parse as every other body's: Fastify's, refusing prototype poisoning.
const parse = strictJson(Fastify().getDefaultJsonParser('error', 'error'));

export default function decode(body: Uint8Array): DecodedBody {
  return decodeJsonBody(body, parse);
}
