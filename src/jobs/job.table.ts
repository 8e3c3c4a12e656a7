export type JobState = 'pending' | 'dead';

export interface JobTable {
  id: string;
  queue: string;
  workspace_id: string | null;
  payload: string;
  state: JobState;
  /** Claims so far (an expired lease counts as an attempt). */
  attempts: number;
  max_attempts: number;
  /** When the job may next be claimed; while a lease is held this is the lease's expiry. */
  run_at: number;
  lease_token: string | null;
  /** 1 when the last claim took over an expired lease (the previous holder died mid-job). */
  interrupted: number;
  last_error: string | null;
  /** Jobs of one group (e.g. one webhook endpoint) are limited in how many run at once per worker; null = no group. */
  group_key: string | null;
  /** At most one pending job of a queue has this key (a webhook delivery: endpoint and event); null = no such rule. */
  dedup_key: string | null;
  created_at: number;
  updated_at: number;
}

/** The queue's table: every durable job. Only src/jobs/queue.ts names it; other modules go through the `Queue`. */
export interface QueueTables {
  jobs: JobTable;
}
