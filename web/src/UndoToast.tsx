import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError } from './api';
import { runRestore, setPendingUndo, usePendingUndo, type UndoAction } from './bulk';
import './bulk.css';
import { invalidateMail } from './queries';
import { composePath, navigate } from './router';
import { undoSend } from './sending';

/** Undo's work: a bulk action's messages set back, or a held send taken back and opened in the composer. */
async function undo(action: UndoAction): Promise<void> {
  if (action.kind === 'restore') {
    await runRestore(action.body);
    return;
  }
  const draft = await undoSend(action.messageId);
  navigate(composePath(draft.mailbox, { draftId: draft.draft_id }));
}

/**
 * The Undo toast of the last bulk action or held send, while it can be undone, on every page of the mail view (a
 * reload keeps it: see bulk.ts).
 */
export function UndoToast() {
  const pending = usePendingUndo();
  const client = useQueryClient();
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  if (pending === null) return null;
  const take = async () => {
    setBusy(true);
    setProblem(null);
    try {
      await undo(pending.action);
      setPendingUndo(null);
    } catch (err) {
      setProblem(err instanceof ApiError ? err.detail : 'the server did not answer');
    } finally {
      setBusy(false);
      await invalidateMail(client);
      if (pending.action.kind === 'unsend') await Promise.all([client.invalidateQueries({ queryKey: ['sent'] }), client.invalidateQueries({ queryKey: ['drafts'] })]);
    }
  };
  return (
    <div className="undo-toast" role="status">
      <span>{pending.text}</span>
      <button type="button" disabled={busy} onClick={() => void take()}>Undo</button>
      <button type="button" aria-label="Dismiss" onClick={() => setPendingUndo(null)}>×</button>
      {problem && <span role="alert">Not undone: {problem}</span>}
    </div>
  );
}
