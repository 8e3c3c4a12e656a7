import { useQueryClient, type UseQueryResult } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError } from './api';
import { describe, offerUndo, runBulk, type BulkInput } from './bulk';
import './bulk.css';
import { MessageList } from './MessageList';
import { invalidateMail } from './queries';
import type { Route } from './router';
import { FOLDERS, type MessagePage } from './types';

type MailRoute = Extract<Route, { page: 'mail' }>;
type Action = Omit<BulkInput, 'message_ids' | 'selection'>;

/** Which rows are checked: ids of this page, or every message the list matches (`all`). */
interface Checked {
  listKey: string;
  ids: ReadonlySet<string>;
  anchor: number | null;
  all: boolean;
}

/** A click on row `index`'s box: with shift, every row from the last one clicked takes the new state. */
function toggled(checked: Checked, ids: string[], index: number, shift: boolean): Checked {
  const id = ids[index];
  if (id === undefined) return checked;
  const on = !checked.ids.has(id);
  const next = new Set(checked.ids);
  const [from, to] = shift && checked.anchor !== null ? [Math.min(checked.anchor, index), Math.max(checked.anchor, index)] : [index, index];
  for (const each of ids.slice(from, to + 1)) {
    if (on) next.add(each);
    else next.delete(each);
  }
  return { ...checked, ids: next, anchor: index, all: false };
}

/** What "every message that matches" is for the route's list; null where the bulk route has no such filter (Starred). */
function selectionOf(route: MailRoute): BulkInput['selection'] | null {
  if (route.view.kind === 'all') return { folder: 'inbox' };
  if (route.view.kind === 'label') return { label: route.view.label };
  if (route.view.kind === 'starred') return null;
  return { mailbox: route.mailbox ?? undefined, folder: route.q ? undefined : route.folder, q: route.q || undefined };
}

function BulkBar(props: { count: number; total: number; pageSize: number; all: boolean; busy: boolean; error: string | null; onAll: (() => void) | null; onClear: () => void; onAct: (action: Action) => void }) {
  const { count, total, all } = props;
  const [label, setLabel] = useState('');
  if (count === 0) return null;
  const disabled = props.busy;
  return (
    <div className="bulk-bar" role="toolbar" aria-label="Bulk actions">
      <span className="bulk-count">{all ? `All ${total} matching selected` : `${count} selected`}</span>
      {!all && props.onAll && count === props.pageSize && total > count && (
        <button type="button" className="link" onClick={props.onAll}>Select all {total} matching</button>
      )}
      <button type="button" className="link" onClick={props.onClear}>Clear selection</button>
      <button type="button" disabled={disabled} onClick={() => props.onAct({ action: 'archive' })}>Archive</button>
      <button type="button" disabled={disabled} onClick={() => props.onAct({ action: 'spam' })}>Spam</button>
      <button type="button" disabled={disabled} className="danger" onClick={() => props.onAct({ action: 'delete' })}>Delete</button>
      <button type="button" disabled={disabled} onClick={() => props.onAct({ action: 'read' })}>Mark read</button>
      <button type="button" disabled={disabled} onClick={() => props.onAct({ action: 'unread' })}>Mark unread</button>
      <select aria-label="Move to folder" disabled={disabled} value="" onChange={(e) => { const folder = FOLDERS.find((f) => f === e.target.value); if (folder) props.onAct({ action: 'move', folder }); }}>
        <option value="">Move to…</option>
        {FOLDERS.map((f) => <option key={f} value={f}>{f}</option>)}
      </select>
      <form className="bulk-label" onSubmit={(e) => { e.preventDefault(); if (label.trim()) props.onAct({ action: 'label', add: [label.trim().toLowerCase()] }); setLabel(''); }}>
        <input aria-label="Label to add" placeholder="label" value={label} onChange={(e) => setLabel(e.target.value)} pattern="[a-zA-Z0-9_.:\-]{1,64}" />
        <button type="submit" disabled={disabled}>Add label</button>
      </form>
      {props.error && <span role="alert" className="error">{props.error}</span>}
    </div>
  );
}

/** The message list with boxes to check rows and a bar of bulk actions over them (their Undo: UndoToast.tsx). */
export function BulkList(props: { route: MailRoute; page: UseQueryResult<MessagePage>; selected: number; onSelect: (index: number) => void; onOpen: (id: string) => void }) {
  const { route, page } = props;
  const client = useQueryClient();
  const listKey = `${route.mailbox ?? ''}|${route.folder}|${route.q}|${route.offset}|${route.view.kind === 'label' ? `label:${route.view.label}` : route.view.kind}`;
  const selection = selectionOf(route);
  const empty: Checked = { listKey, ids: new Set(), anchor: null, all: false };
  const [state, setState] = useState<Checked>(empty);
  const checked = state.listKey === listKey ? state : empty;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const ids = (page.data?.messages ?? []).map((m) => m.message_id);
  const total = page.data?.total ?? 0;

  async function act(action: Action) {
    const target = checked.all && selection
      ? { selection }
      : { message_ids: ids.filter((id) => checked.ids.has(id)) };
    setBusy(true);
    setError(null);
    try {
      const answer = await runBulk({ ...action, ...target });
      const done = answer.results.filter((r) => r.ok).length;
      setState(empty);
      if (answer.undo.items.length > 0) offerUndo(describe(action.action, done, action.folder), answer.undo);
    } catch (err) {
      setError(err instanceof ApiError ? err.detail : 'the server did not answer');
    } finally {
      setBusy(false);
      await invalidateMail(client);
    }
  }

  const allOnPage = ids.length > 0 && ids.every((id) => checked.ids.has(id));
  const count = checked.all ? total : checked.ids.size;
  const bar = (
    <div className="bulk-head">
      <input type="checkbox" aria-label="Select all on this page" checked={allOnPage} disabled={ids.length === 0} onChange={() => setState({ ...checked, ids: allOnPage ? new Set() : new Set(ids), all: false, anchor: null })} />
      <BulkBar count={count} total={total} pageSize={ids.length} all={checked.all} busy={busy} error={error} onAll={selection ? () => setState({ ...checked, all: true }) : null} onClear={() => setState(empty)} onAct={(a) => void act(a)} />
    </div>
  );
  return (
    <>
      <MessageList {...props} bulk={{ checked: checked.ids, onCheck: (index, shift) => setState(toggled(checked, ids, index, shift)), bar }} />
    </>
  );
}
