/**
 * FETCH's ENVELOPE, BODYSTRUCTURE and BODY through the mail store's kept copies (src/modules/mail/README-structures.md):
 * a message without one has it computed from its raw source here, on the pool and in no transaction, and kept for
 * the next FETCH, one statement per batch. Keeping it is an optimisation only: if that write fails, the FETCH
 * still answers with what was computed.
 */
import type { Work } from '../../db/tables.js';
import { structureBytes } from '../../lib/imap-message/index.js';
import type { Logger } from '../../lib/logger.js';
import type { FetchEntry, MailStore, NewStructure } from '../mail/mail.store.js';
import { rawChunks } from './raw-reads.js';

export type StructureStore = Pick<MailStore, 'structureSources' | 'saveStructures'>;

/**
 * `rows` (read with their kept structures) each with a structure: those without one get it from their raw source,
 * and it is kept. A message whose raw source is gone meanwhile (deleted) is left out of the answer.
 */
export async function withStructures(work: Work, store: StructureStore, logger: Pick<Logger, 'warn'>, workspaceId: string, rows: FetchEntry[]): Promise<FetchEntry[]> {
  const missing = rows.filter((r) => !r.structure);
  if (missing.length === 0) return rows;
  const made: NewStructure[] = [];
  for (const chunk of rawChunks(missing)) {
    const raws = await store.structureSources(work, workspaceId, chunk.map((r) => r.id));
    for (const row of chunk) {
      const raw = raws.get(row.id);
      if (!raw) continue;
      row.structure = structureBytes(raw);
      made.push({ messageId: row.id, ...row.structure });
    }
  }
  try {
    await store.saveStructures(work, workspaceId, made);
  } catch (err) {
    logger.warn({ err, workspaceId, messages: made.length }, 'imap: keeping FETCH structures failed (computed again next time)');
  }
  return rows.filter((r) => r.structure);
}
