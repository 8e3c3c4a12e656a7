export interface EventTable {
  id: string;
  workspace_id: string;
  type: string;
  /** The exact JSON bytes every subscriber delivers (and webhooks sign). */
  payload: string;
  created_at: number;
}

/** The events module's table: every workspace's event log (the feed, the stream and webhook deliveries read it). */
export interface EventTables {
  events: EventTable;
}
