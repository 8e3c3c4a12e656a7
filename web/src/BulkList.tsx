import { useQueryClient, type UseQueryResult } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError } from './api';
import { describe, offerUndo, runBulk, type BulkInput } from './bulk';
import './bulk.css';
import { MessageList } from './MessageList';
import { ConversationList } from './ConversationList';
import type { ThreadPage } from './conversations';
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

/** Run one bulk action, then offer its Undo; `done` clears the checked rows once it went through. */
function useBulkRun(done: () => void) {
  const client = useQueryClient();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function act(action: Action, target: Pick<BulkInput, 'message_ids' | 'selection'>) {
    setBusy(true);
    setError(null);
    try {
      const answer = await runBulk({ ...action, ...target });
      const changed = answer.results.filter((r) => r.ok).length;
      done();
      if (answer.undo.items.length > 0) offerUndo(describe(action.action, changed, action.folder), answer.undo);
    } catch (err) {
      setError(err instanceof ApiError ? err.detail : 'the server did not answer');
    } finally {
      setBusy(false);
      await invalidateMail(client);
    }
  }
  return { busy, error, act };
}

/** The checked rows of one list (mailbox, folder, search and page); another list starts with none. */
function useChecked(route: MailRoute) {
  const listKey = `${route.mailbox ?? ''}|${route.folder}|${route.q}|${route.offset}|${route.view.kind === 'label' ? `label:${route.view.label}` : route.view.kind}`;
  const empty: Checked = { listKey, ids: new Set(), anchor: null, all: false };
  const [state, setState] = useState<Checked>(empty);
  return { checked: state.listKey === listKey ? state : empty, setChecked: setState, clear: () => setState(empty) };
}

/** The box over the list (the page's rows) and the bar of actions. */
function BulkHead(props: { ids: string[]; total: number; checked: Checked; setChecked: (c: Checked) => void; clear: () => void; run: ReturnType<typeof useBulkRun>; onAct: (a: Action) => void; allMatching: boolean }) {
  const { ids, checked, setChecked } = props;
  const allOnPage = ids.length > 0 && ids.every((id) => checked.ids.has(id));
  const count = checked.all ? props.total : checked.ids.size;
  return (
    <div className="bulk-head">
      <input type="checkbox" aria-label="Select all on this page" checked={allOnPage} disabled={ids.length === 0} onChange={() => setChecked({ ...checked, ids: allOnPage ? new Set() : new Set(ids), all: false, anchor: null })} />
      <BulkBar count={count} total={props.total} pageSize={ids.length} all={checked.all} busy={props.run.busy} error={props.run.error} onAll={props.allMatching ? () => setChecked({ ...checked, all: true }) : null} onClear={props.clear} onAct={props.onAct} />
    </div>
  );
}

type ListProps<P> = { route: MailRoute; page: UseQueryResult<P>; selected: number; onSelect: (index: number) => void; onOpen: (id: string) => void };

/** The message list with boxes to check rows and a bar of bulk actions over them (their Undo: UndoToast.tsx). */
export function BulkList(props: ListProps<MessagePage>) {
  const { route, page } = props;
  const { checked, setChecked, clear } = useChecked(route);
  const run = useBulkRun(clear);
  const ids = (page.data?.messages ?? []).map((m) => m.message_id);
  const total = page.data?.total ?? 0;
  const selection = selectionOf(route);
  const act = (action: Action) => void run.act(action, checked.all && selection ? { selection } : { message_ids: ids.filter((id) => checked.ids.has(id)) });
  const bar = <BulkHead ids={ids} total={total} checked={checked} setChecked={setChecked} clear={clear} run={run} onAct={act} allMatching={selection !== null} />;
  return (
    <>
      <MessageList {...props} bulk={{ checked: checked.ids, onCheck: (index, shift) => setChecked(toggled(checked, ids, index, shift)), bar }} />
    </>
  );
}

/**
 * The conversation list with rows to check: an action takes every message the checked threads have in this folder
 * (the server expands `selection.thread_ids`, so it is one request however long the threads); Undo as above.
 */
export function ConversationBulkList(props: ListProps<ThreadPage>) {
  const { route, page } = props;
  const { checked, setChecked, clear } = useChecked(route);
  const run = useBulkRun(clear);
  const ids = (page.data?.threads ?? []).map((t) => t.thread_id);
  const total = page.data?.total ?? 0;
  const scope = { mailbox: route.mailbox ?? undefined, folder: route.folder };
  const act = (action: Action) =>
    void run.act(action, { selection: checked.all ? scope : { ...scope, thread_ids: ids.filter((id) => checked.ids.has(id)) } });
  const bar = <BulkHead ids={ids} total={total} checked={checked} setChecked={setChecked} clear={clear} run={run} onAct={act} allMatching />;
  return (
    <>
      <ConversationList {...props} bulk={{ checked: checked.ids, onCheck: (index, shift) => setChecked(toggled(checked, ids, index, shift)), bar }} />
    </>
  );
}
