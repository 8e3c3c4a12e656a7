/** Event names (docs/api.md). `message.delivered` is reserved: accepted in filters, never emitted. */
export const EVENT_TYPES = [
  'message.received',
  'message.sent',
  'message.accepted',
  'message.failed',
  'message.delivered',
  'message.bounced',
  'message.rejected',
  'message.complained',
  'message.cancelled',
  'domain.verified',
  'webhook.disabled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** An event as written to the outbox; `payload` is the exact JSON delivered to subscribers. */
export interface StoredEvent {
  id: string;
  workspaceId: string;
  type: EventType;
  payload: string;
  createdAt: number;
}

export interface EmitInput {
  workspaceId: string;
  type: Exclude<EventType, 'message.delivered'>;
  data: Record<string, unknown>;
}
