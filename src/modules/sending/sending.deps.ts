import type { Work } from '../../db/tables.js';
import type { EmitInput } from '../events/event.types.js';

/** Writing an event into the outbox, in the caller's transaction (`EventsService.emit`). */
export interface EventOutbox {
  emit(work: Work, input: EmitInput): Promise<unknown>;
  emitMany(work: Work, inputs: readonly EmitInput[]): Promise<unknown>;
}

/** The sending domain check of a send (`DomainService.isAllowedDomain`), read on the caller's connection. */
export interface SendingDomains {
  isAllowedDomain(workspaceId: string, domain: string, conn: Work): Promise<boolean>;
}
