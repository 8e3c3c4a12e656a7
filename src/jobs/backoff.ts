/** Exponential backoff with proportional jitter: base × factor^(attempt-1), capped, then ±jitter. */
export interface BackoffPolicy {
  baseMs: number;
  factor: number;
  capMs: number;
  /** Fraction of the delay to spread either way (0.2 = ±20%). */
  jitter: number;
}

export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number = Math.random): number {
  const raw = Math.min(policy.capMs, policy.baseMs * policy.factor ** Math.max(0, attempt - 1));
  const spread = raw * policy.jitter;
  return Math.max(0, Math.round(raw - spread + random() * 2 * spread));
}
