export interface EventTable {
  id: string;
  workspace_id: string;
  type: string;
  /** The exact JSON bytes every subscriber delivers (and webhooks sign). */
  payload: string;
  created_at: number;
}
