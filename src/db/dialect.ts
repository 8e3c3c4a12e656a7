/**
 * What differs between the two databases, as capability flags in one place; the rest of the code
 * asks these flags instead of testing which database it runs on.
 */
export interface DialectInfo {
  name: 'sqlite' | 'postgres';
  /** `SELECT … FOR UPDATE SKIP LOCKED` lets many workers claim from one queue without blocking. */
  supportsSkipLocked: boolean;
}

export const SQLITE: DialectInfo = { name: 'sqlite', supportsSkipLocked: false };
export const POSTGRES: DialectInfo = { name: 'postgres', supportsSkipLocked: true };

/** Whether an error from either driver is a unique-constraint violation. */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = (err as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
