import type { Work } from '../../db/tables.js';
import { isUniqueViolation } from '../../db/dialect.js';
import type { Clock } from '../../lib/clock.js';
import { conflict } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { hashToken, newToken } from '../../lib/secrets.js';
import type { TenancyStore } from './tenancy.store.js';

// Writes shared by the operator commands (admin.service.ts) and the workspace's own admins (workspace-admin.service.ts),
// so a user or a key made either way is the same row.

/** Insert a user (hash its password with `hashPassword` first, outside the transaction); 409 email_taken when the address has one already. */
export async function insertUser(store: Pick<TenancyStore, 'insertUser'>, trx: Work, clock: Clock, email: string, passwordHash: string): Promise<string> {
  const id = newId('usr');
  try {
    await store.insertUser(trx, { id, email, password_hash: passwordHash, created_at: clock.now() });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict('email_taken', `a user with email ${email} already exists`);
    throw err;
  }
  return id;
}

/** Insert an API key (stored as its hash); the plaintext is in this answer only. */
export async function insertApiKey(store: Pick<TenancyStore, 'insertApiKey'>, trx: Work, clock: Clock, workspaceId: string | null, name = '') {
  const token = newToken('mrk');
  const row = { id: newId('key'), workspace_id: workspaceId, name, token_hash: hashToken(token), created_at: clock.now(), last_used_at: null, revoked_at: null };
  await store.insertApiKey(trx, row);
  return { token, row };
}
