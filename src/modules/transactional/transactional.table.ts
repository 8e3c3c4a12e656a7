export const SERVICE_TOKEN_SCOPES = ['message:send'] as const;
export type ServiceTokenScope = (typeof SERVICE_TOKEN_SCOPES)[number];

export interface ServiceTokenTable {
  id: string;
  workspace_id: string;
  name: string;
  scope: ServiceTokenScope;
  domain_id: string;
  mailbox_id: string;
  /** SHA-256 of the current plaintext credential (mst_…), which is shown only on create and rotate. */
  token_hash: string;
  created_at: number;
  rotated_at: number | null;
  last_used_at: number | null;
}

export interface IdempotencyKeyTable {
  token_id: string;
  idempotency_key: string;
  workspace_id: string;
  /** SHA-256 (hex) of the RFC 8785 canonical JSON of the validated request body. */
  request_hash: string;
  /** The message created (it may since have been deleted with its mailbox). */
  message_id: string;
  /** The exact 202 body first answered, replayed verbatim. */
  response_json: string;
  created_at: number;
}

/** The transactional module's tables: service tokens and the idempotency keys of sends made with them. */
export interface TransactionalTables {
  service_tokens: ServiceTokenTable;
  idempotency_keys: IdempotencyKeyTable;
}
