import { createDeliveryStore, type DeliveryStore, type DeliveryStoreDeps } from './delivery.store.js';
import { createDraftStore, type DraftStore } from './draft.store.js';
import { createOutboundStore, type OutboundStore, type OutboundStoreDeps } from './outbound.store.js';
import { createSuppressionStore, type SuppressionStore } from './suppression.store.js';

export type { DeliveryJob, Delivery, RunStart, Settlement } from './delivery.store.js';
export type { DraftAttachmentMeta, DraftRow, NewDraftRow } from './draft.store.js';
export type { NewOutbound, OutboundKey, SenderRow } from './outbound.store.js';

/**
 * The sending half of the mail store: the outbound copies' delivery state (sends, scheduling, delivery runs), drafts
 * and their files, and suppressions. The received half (`ReceivedMailStore`, mail.store.ts) holds the messages and
 * their mailboxes; together they are the mail store.
 */
export type SendingMailStore = OutboundStore & DeliveryStore & DraftStore & SuppressionStore;

export type SendingMailStoreDeps = OutboundStoreDeps & Omit<DeliveryStoreDeps, 'suppressions'>;

export function createSendingMailStore(deps: SendingMailStoreDeps): SendingMailStore {
  const suppressions = createSuppressionStore();
  return {
    ...createOutboundStore(deps),
    ...createDeliveryStore({ ...deps, suppressions }),
    ...createDraftStore(deps),
    ...suppressions,
  };
}
