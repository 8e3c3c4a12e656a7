import { useEffect, useState } from 'react';
import { answerOf, client } from './api';
import type { Schema } from './types';

export type BulkInput = Schema<'BulkInput'>;
export type BulkAnswer = Schema<'BulkAnswer'>;
export type RestoreInput = Schema<'RestoreInput'>;

/** How long an action can be undone: the toast's life, and the saved undo's. */
export const UNDO_MS = 6000;
const KEY = 'mailroom.pending-undo';

/** What an Undo does: set a bulk action's messages back, or take a held send back as a draft (undo send). */
export type UndoAction = { kind: 'restore'; body: RestoreInput } | { kind: 'unsend'; messageId: string };

/** An undo the user may still take: what the toast says, what Undo does, and until when. */
export interface PendingUndo {
  text: string;
  action: UndoAction;
  until: number;
}

export function runBulk(body: BulkInput): Promise<BulkAnswer> {
  return answerOf(client.POST('/app/api/messages/bulk', { body }));
}

export function runRestore(body: RestoreInput): Promise<BulkAnswer> {
  return answerOf(client.POST('/app/api/messages/bulk/restore', { body }));
}

// The pending undo lives in sessionStorage so a reload within its window keeps it; listeners are the toasts shown.
const listeners = new Set<(undo: PendingUndo | null) => void>();

function read(): PendingUndo | null {
  try {
    const saved = JSON.parse(sessionStorage.getItem(KEY) ?? 'null') as Partial<PendingUndo> | null;
    // One saved by an older app (no `action`) is dropped rather than misread.
    return saved?.action && typeof saved.until === 'number' && typeof saved.text === 'string' && saved.until > Date.now() ? (saved as PendingUndo) : null;
  } catch {
    return null;
  }
}

export function setPendingUndo(undo: PendingUndo | null): void {
  if (undo === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, JSON.stringify(undo));
  for (const l of listeners) l(undo);
}

/** Offer the undo of an action done now, for UNDO_MS. */
export function offerUndo(text: string, body: RestoreInput): void {
  setPendingUndo({ text, action: { kind: 'restore', body }, until: Date.now() + UNDO_MS });
}

/** Offer to take back a held send until `until` (the end of the server's undo window, by this browser's clock). */
export function offerUndoSend(messageId: string, until: number): void {
  setPendingUndo({ text: 'Sending…', action: { kind: 'unsend', messageId }, until });
}

/** The pending undo while its window is open; null after it (or once taken or dismissed). */
export function usePendingUndo(): PendingUndo | null {
  const [undo, setUndo] = useState<PendingUndo | null>(read);
  useEffect(() => {
    listeners.add(setUndo);
    return () => void listeners.delete(setUndo);
  }, []);
  useEffect(() => {
    if (undo === null) return undefined;
    const timer = setTimeout(() => setPendingUndo(null), Math.max(undo.until - Date.now(), 0));
    return () => clearTimeout(timer);
  }, [undo]);
  return undo;
}

/** What a toast says of an action done on `count` messages. */
export function describe(action: BulkInput['action'], count: number, folder?: string): string {
  const what = count === 1 ? '1 message' : `${count} messages`;
  const done: Record<BulkInput['action'], string> = {
    archive: 'archived',
    spam: 'marked as spam',
    delete: 'deleted',
    move: `moved to ${folder ?? 'a folder'}`,
    label: 'labelled',
    read: 'marked read',
    unread: 'marked unread',
    flag: 'starred',
    unflag: 'unstarred',
  };
  return `${what} ${done[action]}`;
}
