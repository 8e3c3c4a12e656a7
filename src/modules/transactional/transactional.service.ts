import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Db } from '../../db/database.js';
import { asWork } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { DomainError, forbidden, invalid, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { AttachmentInput } from '../sending/attachments.js';
import type { Queued, SendingService } from '../sending/sending.service.js';
import type { DeliveryStatus } from '../mail/outbound.table.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
import type { ServiceTokenContext } from './service-token.service.js';

/** An Idempotency-Key is 1–255 printable ASCII characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
const PRINTABLE = /^[\x20-\x7e]+$/;

/** The validated body of POST /v1/transactional/messages (docs/api.md). */
export interface TransactionalSendInput {
  from_mailbox: string;
  to: string | string[];
  subject: string;
  body: string;
  html?: string | undefined;
  from_name?: string | undefined;
  reply_to?: string | undefined;
  /** Base64 as sent: part of the canonical payload, so another file under the same key is a 409. */
  attachments?: Array<AttachmentInput & { content: string }> | undefined;
}

export interface TransactionalResult {
  /** The 202 body: the first answer, byte for byte the same on every replay. */
  body: Queued;
  replayed: boolean;
}

export interface TransactionalMessageView {
  message_id: string;
  status: DeliveryStatus;
  idempotency_key: string;
  from_mailbox: string;
  to: string[];
  subject: string;
  created_at: string;
  updated_at: string;
  /** The delivery attempts as stored (one object each). */
  attempts: Record<string, unknown>[];
  last_error: string | null;
  smtp_response: string | null;
}

export interface TransactionalService {
  /**
   * Exactly-once send under an Idempotency-Key: a new key queues one message; the same key with the
   * same canonical payload replays the first 202; the same key with other content is 409. Concurrent
   * requests with one key wait for the first to finish and then answer as replays (or 409).
   */
  send(token: ServiceTokenContext, idempotencyKey: string | undefined, input: TransactionalSendInput): Promise<TransactionalResult>;
  get(token: ServiceTokenContext, messageId: string): Promise<TransactionalMessageView>;
  getByKey(token: ServiceTokenContext, idempotencyKey: string): Promise<TransactionalMessageView>;
}

/** The key when it is 1–255 printable ASCII characters; 400 otherwise. */
export function checkIdempotencyKey(key: string | undefined): string {
  if (key === undefined || key.length === 0) {
    throw invalid('idempotency_key_required', 'send an Idempotency-Key header (1–255 printable characters), the same on every retry of one logical request');
  }
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !PRINTABLE.test(key)) {
    throw invalid('invalid_idempotency_key', `the Idempotency-Key must be 1–${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`);
  }
  return key;
}

/** SHA-256 of the RFC 8785 canonical JSON: key order and number spelling no longer matter. */
export function payloadHash(input: TransactionalSendInput): string {
  const canonical = canonicalize(input);
  if (canonical === undefined) throw invalid('invalid_request', 'the body cannot be canonicalised');
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

export function createTransactionalService({ db, clock, sending }: { db: Db; clock: Clock; sending: SendingService }): TransactionalService {
  async function findKey(conn: Db, token: ServiceTokenContext, key: string) {
    return conn
      .selectFrom('idempotency_keys')
      .select(['request_hash', 'response_json'])
      .where('token_id', '=', token.tokenId)
      .where('workspace_id', '=', token.workspaceId)
      .where('idempotency_key', '=', key)
      .executeTakeFirst();
  }

  function answerExisting(existing: { request_hash: string; response_json: string }, hash: string): TransactionalResult {
    if (existing.request_hash !== hash) {
      throw new DomainError('conflict', 'idempotency_key_reused', 'this Idempotency-Key was already used with a different request; use a new key for a new message');
    }
    return { body: JSON.parse(existing.response_json) as Queued, replayed: true };
  }

  async function view(token: ServiceTokenContext, where: { messageId: string } | { key: string }): Promise<TransactionalMessageView> {
    let query = db
      .selectFrom('idempotency_keys as k')
      .innerJoin('outbound as o', (join) => join.onRef('o.message_id', '=', 'k.message_id').onRef('o.workspace_id', '=', 'k.workspace_id'))
      .innerJoin('messages as m', (join) => join.onRef('m.id', '=', 'k.message_id').onRef('m.workspace_id', '=', 'k.workspace_id'))
      .innerJoin('mailboxes as b', (join) => join.onRef('b.id', '=', 'm.mailbox_id').onRef('b.workspace_id', '=', 'm.workspace_id'))
      .select([
        'k.message_id',
        'k.idempotency_key',
        'o.status',
        'o.attempts_json',
        'o.last_error',
        'o.smtp_response',
        'o.created_at',
        'o.updated_at',
        'm.subject',
        'm.to_json',
        'b.address as from_mailbox',
      ])
      .where('k.token_id', '=', token.tokenId)
      .where('k.workspace_id', '=', token.workspaceId);
    query = 'messageId' in where ? query.where('k.message_id', '=', where.messageId) : query.where('k.idempotency_key', '=', where.key);
    const row = await query.executeTakeFirst();
    if (!row) {
      throw 'messageId' in where
        ? notFound('message_not_found', `no message ${where.messageId} sent with this service token`)
        : notFound('message_not_found', 'no message was sent with this Idempotency-Key and this service token');
    }
    return {
      message_id: row.message_id,
      status: row.status,
      idempotency_key: row.idempotency_key,
      from_mailbox: row.from_mailbox,
      to: (JSON.parse(row.to_json) as Array<{ address: string }>).map((a) => a.address),
      subject: row.subject,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      attempts: JSON.parse(row.attempts_json) as Record<string, unknown>[],
      last_error: row.last_error,
      smtp_response: row.smtp_response,
    };
  }

  return {
    async send(token, idempotencyKey, input) {
      const key = checkIdempotencyKey(idempotencyKey);
      if (normalizeEmail(input.from_mailbox) !== token.mailbox) {
        throw forbidden('token_scope', `this service token sends only from ${token.mailbox}`);
      }
      const hash = payloadHash(input);
      // The common retry: the key is already settled; answer without touching anything else.
      const settled = await findKey(db, token, key);
      if (settled) return answerExisting(settled, hash);

      const tenant: TenantContext = { workspaceId: token.workspaceId, role: 'service_token', userId: null };
      // Refusals (lists, an unverified domain) are answered before the key is claimed, so the key stays
      // free for a corrected request (as Stripe does for requests that fail validation).
      await sending.check(tenant, input);
      const messageId = newId('msg');
      const body: Queued = { message_id: messageId, status: 'queued' };
      const claimed = await db.transaction().execute(async (trx) => {
        // Claim the key first. On PostgreSQL a concurrent claim of the same key blocks here until the
        // first transaction ends and then inserts nothing; SQLite runs one transaction at a time.
        const inserted = await trx
          .insertInto('idempotency_keys')
          .values({
            token_id: token.tokenId,
            idempotency_key: key,
            workspace_id: token.workspaceId,
            request_hash: hash,
            message_id: messageId,
            response_json: JSON.stringify(body),
            created_at: clock.now(),
          })
          .onConflict((oc) => oc.columns(['token_id', 'idempotency_key']).doNothing())
          .executeTakeFirst();
        if ((inserted.numInsertedOrUpdatedRows ?? 0n) === 0n) return null;
        const queued = await sending.enqueue(tenant, { ...input, messageId }, asWork(trx));
        // The answer says more than the claim did (suppressed recipients left out): replays give the same answer.
        if (JSON.stringify(queued) !== JSON.stringify(body)) {
          await trx.updateTable('idempotency_keys').set({ response_json: JSON.stringify(queued) }).where('token_id', '=', token.tokenId).where('idempotency_key', '=', key).execute();
        }
        return queued;
      });
      if (claimed) return { body: claimed, replayed: false };
      const winner = await findKey(db, token, key);
      if (!winner) throw new Error('idempotency key vanished after a conflicting claim');
      return answerExisting(winner, hash);
    },

    get: (token, messageId) => view(token, { messageId }),
    getByKey: (token, key) => view(token, { key: checkIdempotencyKey(key) }),
  };
}
