import { useEffect, useRef, useState } from 'react';
import { ApiError } from './api';
import { RECIPIENT_ERRORS } from './compose';
import { createDraft, patchDraft, saveOnUnload, type DraftFields } from './sending';

/** Quiet time after the last keystroke before the draft is written: a save per pause, not per key. */
export const AUTOSAVE_DELAY_MS = 800;

export type SaveState =
  | { kind: 'idle' }
  | { kind: 'saving' }
  | { kind: 'saved'; at: Date }
  | { kind: 'error'; detail: string; recipients: boolean };

export interface Autosave {
  state: SaveState;
  /** The form changed: write it after a pause (created on the first change, changed with PATCH after). */
  change(fields: DraftFields): void;
  /** Write the form as it is now, with its recipients, and answer the draft's id; throws the API's refusal. */
  saveNow(): Promise<string>;
  /** Stop saving (the draft is being discarded or sent); answers the id once pending writes are done. */
  stop(): Promise<string | null>;
}

function detailOf(err: unknown): string {
  return err instanceof ApiError ? err.detail : 'the server did not answer';
}

/**
 * Saves the form as a draft while it is typed. Writes run one after another, so the first change creates one
 * draft, never two. A recipient that is no address yet (typing `bob@`) would make the API refuse the whole write,
 * so such a write is made again without the recipients: the text is never lost to a half-typed address.
 */
export function useAutosave(initial: DraftFields, draftId: string | null, onCreated: (id: string) => void): Autosave {
  const id = useRef(draftId);
  const latest = useRef(initial);
  const dirty = useRef(false);
  const stopped = useRef(false);
  const recipientsSaved = useRef(true);
  const chain = useRef<Promise<unknown>>(Promise.resolve());
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const [state, setState] = useState<SaveState>({ kind: 'idle' });

  async function write(fields: DraftFields, withRecipients: boolean): Promise<string> {
    if (id.current !== null) {
      await patchDraft(id.current, fields, withRecipients);
      return id.current;
    }
    const created = await createDraft(fields, withRecipients);
    id.current = created.draft_id;
    onCreated(created.draft_id);
    return created.draft_id;
  }

  async function autosave(): Promise<void> {
    if (!dirty.current || stopped.current) return;
    dirty.current = false;
    setState({ kind: 'saving' });
    try {
      await write(latest.current, true);
      recipientsSaved.current = true;
      setState({ kind: 'saved', at: new Date() });
    } catch (err) {
      const recipients = err instanceof ApiError && RECIPIENT_ERRORS.has(err.code);
      recipientsSaved.current = !recipients;
      if (recipients) await write(latest.current, false).catch(() => undefined);
      setState({ kind: 'error', detail: detailOf(err), recipients });
    }
  }

  const queue = <T,>(task: () => Promise<T>): Promise<T> => {
    const next = chain.current.then(task, task);
    chain.current = next.catch(() => undefined);
    return next;
  };
  const clearTimer = () => {
    if (timer.current !== null) clearTimeout(timer.current);
    timer.current = null;
  };

  useEffect(() => {
    const onHide = () => {
      if (dirty.current && !stopped.current && id.current !== null) saveOnUnload(id.current, latest.current, recipientsSaved.current);
    };
    window.addEventListener('pagehide', onHide);
    return () => {
      window.removeEventListener('pagehide', onHide);
      // Leaving the form inside the app: write what the pause had not written yet.
      clearTimer();
      void queue(autosave);
    };
    // The refs carry the current values; the listener is set once.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  return {
    state,
    change(fields) {
      latest.current = fields;
      dirty.current = true;
      clearTimer();
      timer.current = setTimeout(() => void queue(autosave), AUTOSAVE_DELAY_MS);
    },
    saveNow() {
      clearTimer();
      dirty.current = false;
      return queue(() => write(latest.current, true));
    },
    stop() {
      clearTimer();
      stopped.current = true;
      return queue(() => Promise.resolve(id.current));
    },
  };
}
