/**
 * Storing a copy with a `Db`, as the sending module still does, answered by the mail store (src/modules/mail). Kept
 * only until sending takes `storeCopy` from the mail store itself; nothing new should call it.
 */
import type { Db } from '../../db/database.js';
import type { DialectInfo } from '../../db/dialect.js';
import { asWork } from '../../db/tables.js';
import type { Clock } from '../../lib/clock.js';
import { createCopyStore, type StoreInput } from '../mail/copy.store.js';
import type { MessageRow } from '../mail/message.store.js';

export type { StoreInput } from '../mail/copy.store.js';

export function createMessageStore(deps: { clock: Clock; dialect: DialectInfo }) {
  const copies = createCopyStore(deps);
  return {
    /** Store one copy of a message in one mailbox; returns the stored row (list-view columns). */
    store: (trx: Db, input: StoreInput): Promise<MessageRow> => copies.storeCopy(asWork(trx), input),
  };
}

export type MessageStore = ReturnType<typeof createMessageStore>;
