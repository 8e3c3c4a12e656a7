import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Work } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { iso } from '../../lib/clock.js';
import { DomainError, forbidden, invalid, notFound } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { AttachmentInput } from '../sending/attachments.js';
import type { Queued, SendingService } from '../sending/sending.service.js';
import type { DeliveryStatus } from '../mail/outbound.table.js';
import type { TenantContext } from '../tenancy/tenancy.types.js';
import { normalizeEmail } from '../tenancy/validation.js';
import type { MailLookups } from '../mail/lookups.store.js';
import type { ServiceTokenContext } from './service-token.service.js';
import type { ServiceTokenStore } from './service-token.store.js';

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
  /** Receivers that offer DSN are asked to report delivery too (sending.service.ts SendInput). */
  delivery_notification?: boolean | undefined;
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
  delivery_notification: boolean;
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

export interface TransactionalDeps {
  work: Work;
  /** The idempotency keys of the token's sends. */
  store: Pick<ServiceTokenStore, 'findClaim' | 'claim' | 'settleClaim'>;
  /** A sent message's delivery state, sender and recipients (the mail store's). */
  mail: Pick<MailLookups, 'sentMessage'>;
  clock: Clock;
  sending: SendingService;
}

/** The handle `sending.enqueue` takes (the whole schema's, until sending takes `Work`): the same transaction. */

export function createTransactionalService({ work, store, mail, clock, sending }: TransactionalDeps): TransactionalService {
  const findKey = (conn: Work, token: ServiceTokenContext, key: string) => store.findClaim(conn, token, { key });

  function answerExisting(existing: { request_hash: string; response_json: string }, hash: string): TransactionalResult {
    if (existing.request_hash !== hash) {
      throw new DomainError('conflict', 'idempotency_key_reused', 'this Idempotency-Key was already used with a different request; use a new key for a new message');
    }
    return { body: JSON.parse(existing.response_json) as Queued, replayed: true };
  }

  async function view(token: ServiceTokenContext, where: { messageId: string } | { key: string }): Promise<TransactionalMessageView> {
    const claim = await store.findClaim(work, token, where);
    const sent = claim ? await mail.sentMessage(work, token.workspaceId, claim.message_id) : undefined;
    const row = claim && sent ? { ...sent, message_id: claim.message_id, idempotency_key: claim.idempotency_key } : undefined;
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
      delivery_notification: row.delivery_notification === 1,
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
      const settled = await findKey(work, token, key);
      if (settled) return answerExisting(settled, hash);

      const tenant: TenantContext = { workspaceId: token.workspaceId, role: 'service_token', userId: null };
      // Refusals (lists, an unverified domain) are answered before the key is claimed, so the key stays
      // free for a corrected request (as Stripe does for requests that fail validation).
      await sending.check(tenant, input);
      const messageId = newId('msg');
      const body: Queued = { message_id: messageId, status: 'queued' };
      const claimed = await work.transaction().execute(async (trx) => {
        // Claim the key first. On PostgreSQL a concurrent claim of the same key blocks here until the
        // first transaction ends and then inserts nothing; SQLite runs one transaction at a time.
        const claimedKey = await store.claim(trx, {
          token_id: token.tokenId,
          idempotency_key: key,
          workspace_id: token.workspaceId,
          request_hash: hash,
          message_id: messageId,
          response_json: JSON.stringify(body),
          created_at: clock.now(),
        });
        if (!claimedKey) return null;
        const queued = await sending.enqueue(tenant, { ...input, messageId }, trx);
        // The answer says more than the claim did (suppressed recipients left out): replays give the same answer.
        if (JSON.stringify(queued) !== JSON.stringify(body)) {
          await store.settleClaim(trx, token.tokenId, key, JSON.stringify(queued));
        }
        return queued;
      });
      if (claimed) return { body: claimed, replayed: false };
      const winner = await findKey(work, token, key);
      if (!winner) throw new Error('idempotency key vanished after a conflicting claim');
      return answerExisting(winner, hash);
    },

    get: (token, messageId) => view(token, { messageId }),
    getByKey: (token, key) => view(token, { key: checkIdempotencyKey(key) }),
  };
}
