import type { UseQueryResult } from '@tanstack/react-query';
import { useEffect, useRef, type ReactNode } from 'react';
import { ApiError } from './api';
import { listKeys, rowTarget, setConversations, type FolderThread, type ThreadPage } from './conversations';
import { shortDate } from './format';
import { PAGE_SIZE, useLabelColours } from './queries';
import { mailPath, navigate, type Route } from './router';
import type { Address } from './types';
import './conversations.css';

type MailRoute = Extract<Route, { page: 'mail' }>;

/** The switch between conversations and one row per message (a preference of this user in this browser). */
export function ConversationToggle({ userId, on }: { userId: string; on: boolean }) {
  return (
    <label className="conversation-toggle">
      <input type="checkbox" checked={on} onChange={(e) => setConversations(userId, e.target.checked)} /> Conversation view
    </label>
  );
}

/** "me" for the mailbox itself, else the sender's first name (or address): the short form a row has room for. */
function senderNames(senders: Address[], mailbox: string): string {
  const names = senders.map((s) => (s.address === mailbox ? 'me' : (s.name.split(/\s+/)[0] ?? '') || s.address));
  return [...new Set(names)].join(', ') || '(no sender)';
}

function Row({ thread, mailbox }: { thread: FolderThread; mailbox: string }) {
  const share = thread.in_folder;
  const count = share?.message_count ?? thread.message_count;
  const unread = (share?.unread_count ?? thread.unread_count) > 0;
  const at = share?.last_message_at ?? thread.last_message_at;
  const colourOf = useLabelColours();
  return (
    <>
      <span className="from">
        {senderNames(share?.senders ?? [], mailbox)}
        {count > 1 && <span className="count"> {count}<span className="visually-hidden"> messages</span></span>}
      </span>
      <span className="subject">
        {unread && <span className="visually-hidden">Unread: </span>}
        {thread.subject || '(no subject)'}
        {thread.labels.map((l) => <span key={l} className="label"><span className="label-dot" aria-hidden="true" style={{ background: colourOf(l) }} />{l}</span>)}
        <span className="snippet"> — {share?.snippet ?? thread.snippet}</span>
      </span>
      <time className="date" dateTime={at}>{shortDate(at)}</time>
    </>
  );
}

function Pager({ route, page }: { route: MailRoute; page: ThreadPage }) {
  const from = page.total === 0 ? 0 : page.offset + 1;
  const to = page.offset + page.threads.length;
  const go = (offset: number) => route.mailbox && navigate(mailPath(route.mailbox, route.folder, null, '', offset));
  return (
    <div className="pager">
      <span>{from}–{to} of {page.total}{page.total_capped ? '+' : ''}</span>
      <button type="button" disabled={page.offset === 0} onClick={() => go(Math.max(page.offset - PAGE_SIZE, 0))} aria-label="Newer conversations">‹</button>
      <button type="button" disabled={to >= page.total} onClick={() => go(page.offset + PAGE_SIZE)} aria-label="Older conversations">›</button>
    </div>
  );
}

/** A folder as conversations: a listbox with one tab stop (the selected row), Up/Down to move, Enter to open. */
export function ConversationList(props: {
  route: MailRoute;
  page: UseQueryResult<ThreadPage>;
  selected: number;
  onSelect: (index: number) => void;
  onOpen: (id: string) => void;
  /** Rows to check (BulkList.tsx): the checked thread ids, a click or Space/x on row `index`, and the bar of actions. */
  bulk?: { checked: ReadonlySet<string>; onCheck: (index: number, shift: boolean) => void; bar: ReactNode };
}) {
  const { route, page, selected, onSelect, onOpen, bulk } = props;
  const rows = useRef<Array<HTMLLIElement | null>>([]);
  useEffect(() => {
    // Focus follows the selection only while the list has it, so typing elsewhere is never interrupted.
    if (document.activeElement?.closest('.conversations')) rows.current[selected]?.focus();
  }, [selected]);
  const title = `${route.folder[0]?.toUpperCase()}${route.folder.slice(1)}`;
  if (page.isPending) return <p className="loading" role="status">Loading conversations…</p>;
  if (page.isError) return <p role="alert" className="error">{page.error instanceof ApiError ? page.error.detail : 'the server did not answer'}</p>;
  const threads = page.data.threads;
  const open = (i: number) => {
    const t = threads[i];
    if (t) onOpen(rowTarget(t));
  };
  return (
    <section aria-labelledby="list-title">
      <div className="list-head">
        <h1 id="list-title" className="list-title">{title}</h1>
        <Pager route={route} page={page.data} />
      </div>
      {bulk?.bar}
      {threads.length === 0 && <p className="muted empty">No conversations here.</p>}
      <ul
        className="messages conversations"
        role="listbox"
        aria-label="Conversations"
        aria-multiselectable={bulk ? true : undefined}
        onKeyDown={(e) => listKeys(e, selected, threads.length, onSelect, () => open(selected), bulk && (() => bulk.onCheck(selected, false)))}
      >
        {threads.map((t, i) => {
          const unread = (t.in_folder?.unread_count ?? t.unread_count) > 0;
          return (
            <li
              key={t.thread_id}
              ref={(el) => { rows.current[i] = el; }}
              role="option"
              aria-selected={i === selected}
              aria-checked={bulk ? bulk.checked.has(t.thread_id) : undefined}
              tabIndex={i === selected ? 0 : -1}
              className={`row ${unread ? 'unread' : ''} ${i === selected ? 'selected' : ''} ${bulk ? 'checkable' : ''}`}
              data-thread-id={t.thread_id}
              onClick={() => { onSelect(i); open(i); }}
              onFocus={() => onSelect(i)}
            >
              {bulk && (
                // The option carries the checked state (aria-checked); this box is its mouse and touch target only.
                <span className={`row-check ${bulk.checked.has(t.thread_id) ? 'on' : ''}`} aria-hidden="true" onClick={(e) => { e.stopPropagation(); onSelect(i); bulk.onCheck(i, e.shiftKey); }} />
              )}
              <Row thread={t} mailbox={route.mailbox ?? ''} />
            </li>
          );
        })}
      </ul>
    </section>
  );
}
