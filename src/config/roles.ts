/** The roles one process can play; `serve` without --role plays all of them. */
export const ROLES = ['api', 'smtp', 'imap', 'worker'] as const;
export type ProcessRole = (typeof ROLES)[number];
