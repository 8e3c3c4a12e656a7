import { tablesOf, type Work } from '../../db/tables.js';
import type { SecretTables } from './secret-key.table.js';

/** The sealed check values that prove which key the stored secrets were sealed with, by name. */
export function createSecretKeyStore() {
  const of = (work: Work) => tablesOf<SecretTables>(work);
  return {
    /** The sealed check value of `name`, or undefined on a database that has none yet. */
    sealedCheck: async (work: Work, name: string): Promise<string | undefined> =>
      (await of(work).selectFrom('secret_key_check').select('sealed').where('name', '=', name).executeTakeFirst())?.sealed,
    /** Store a check value unless one is there already (of two processes starting at once, the first wins). */
    insertCheck: (work: Work, name: string, sealed: string, at: number) =>
      of(work).insertInto('secret_key_check').values({ name, sealed, created_at: at }).onConflict((oc) => oc.column('name').doNothing()).execute(),
  };
}

export type SecretKeyStore = ReturnType<typeof createSecretKeyStore>;
