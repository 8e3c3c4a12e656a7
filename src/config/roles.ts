/** The roles one process can play; `serve` without --role plays all of them. */
export const ROLES = ['api', 'smtp', 'worker'] as const;
export type ProcessRole = (typeof ROLES)[number];
