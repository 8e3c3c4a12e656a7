/** The sealed value every start opens to prove it holds the database's key (one row). */
export interface SecretKeyCheckTable {
  name: string;
  /** `v1:…` (lib/secret-box.ts) of a fixed text. */
  sealed: string;
  created_at: number;
}

/** The secrets module's table: the sealed check value that proves which key sealed the stored secrets. */
export interface SecretTables {
  secret_key_check: SecretKeyCheckTable;
}
