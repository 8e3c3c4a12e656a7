import type { UseQueryResult } from '@tanstack/react-query';
import { useEffect, useRef, type ReactNode } from 'react';
import { ApiError } from './api';
import { person, shortDate } from './format';
import { listKeys } from './conversations';
import { PAGE_SIZE, useLabelColours, useMessageAction } from './queries';
import { isCross, listPath, navigate, type Route } from './router';
import type { MessagePage } from './types';

type MailRoute = Extract<Route, { page: 'mail' }>;

function Pager({ route, page }: { route: MailRoute; page: MessagePage }) {
  const from = page.total === 0 ? 0 : page.offset + 1;
  const to = page.offset + page.messages.length;
  const go = (offset: number) => {
    const to = listPath(route, null, offset);
    if (to) navigate(to);
  };
  return (
    <div className="pager">
      <span>{from}–{to} of {page.total}{page.total_capped ? '+' : ''}</span>
      <button type="button" disabled={page.offset === 0} onClick={() => go(Math.max(page.offset - PAGE_SIZE, 0))} aria-label="Newer messages">‹</button>
      <button type="button" disabled={to >= page.total} onClick={() => go(page.offset + PAGE_SIZE)} aria-label="Older messages">›</button>
    </div>
  );
}

/** The list's heading: the folder, the search, or the list across mailboxes. */
function listTitle(route: MailRoute): string {
  if (route.view.kind === 'all') return 'All inboxes';
  if (route.view.kind === 'starred') return 'Starred';
  if (route.view.kind === 'label') return `Label: ${route.view.label}`;
  return route.q ? `Search: ${route.q}` : `${route.folder[0]?.toUpperCase()}${route.folder.slice(1)}`;
}

export function MessageList(props: {
  route: MailRoute;
  page: UseQueryResult<MessagePage>;
  selected: number;
  onSelect: (index: number) => void;
  onOpen: (id: string) => void;
  /** Rows with boxes to check (BulkList.tsx): the checked ids, a click on row `index`'s box, and the bar of actions. */
  bulk?: { checked: ReadonlySet<string>; onCheck: (index: number, shift: boolean) => void; bar: ReactNode };
}) {
  const { route, page, selected, bulk } = props;
  const rows = useRef<Array<HTMLAnchorElement | null>>([]);
  useEffect(() => {
    // Focus follows j/k only when the list already has it, so typing elsewhere is never interrupted.
    if (document.activeElement?.closest('.messages')) rows.current[selected]?.focus();
  }, [selected]);
  const title = listTitle(route);
  const colourOf = useLabelColours();
  const action = useMessageAction();
  const cross = isCross(route.view);

  if (page.isPending) return <p className="loading" role="status">Loading messages…</p>;
  if (page.isError) {
    const err = page.error;
    const detail = err instanceof ApiError ? err.detail : 'the server did not answer';
    return err instanceof ApiError && err.code === 'invalid_query' ? <h1 className="list-title">{title}</h1> : <p role="alert" className="error">{detail}</p>;
  }
  const data = page.data;
  return (
    <section aria-labelledby="list-title">
      <div className="list-head">
        <h1 id="list-title" className="list-title">{title}</h1>
        <Pager route={route} page={data} />
      </div>
      {bulk?.bar}
      {data.messages.length === 0 && <p className="muted empty">No messages here.</p>}
      <ul
        className="messages"
        aria-label="Messages"
        onKeyDown={(e) => listKeys(e, selected, data.messages.length, props.onSelect, () => { const m = data.messages[selected]; if (m) props.onOpen(m.message_id); })}
      >
        {data.messages.map((m, i) => (
          <li key={m.message_id} className={`row ${m.read ? '' : 'unread'} ${i === selected ? 'selected' : ''} ${bulk ? 'checkable' : ''} starrable`} data-message-id={m.message_id}>
            {bulk && (
              <input type="checkbox" aria-label={`Select ${m.subject || '(no subject)'}`} checked={bulk.checked.has(m.message_id)} onChange={() => undefined} onClick={(e) => bulk.onCheck(i, e.shiftKey)} />
            )}
            <button type="button" className="star-toggle" aria-pressed={m.flagged} aria-label={`Star ${m.subject || '(no subject)'}`}
              onClick={() => action.mutate({ id: m.message_id, action: { kind: 'flag', flagged: !m.flagged } })}>
              <span aria-hidden="true">{m.flagged ? '★' : '☆'}</span>
            </button>
            <a
              ref={(el) => { rows.current[i] = el; }}
              href={listPath(route, m.message_id, route.offset) ?? '#'}
              tabIndex={i === selected ? 0 : -1}
              aria-current={i === selected ? 'true' : undefined}
              onClick={(e) => { e.preventDefault(); props.onOpen(m.message_id); }}
              onFocus={() => props.onSelect(i)}
            >
              <span className="from">{m.direction === 'outbound' ? `To: ${m.to.map((t) => t.address).join(', ')}` : person(m.from)}</span>
              <span className="subject">
                {!m.read && <span className="visually-hidden">Unread: </span>}
                {m.flagged && <span className="visually-hidden">Starred: </span>}
                {cross && <span className="row-mailbox">{m.mailbox} · </span>}
                {m.subject || '(no subject)'}
                {m.labels.map((l) => <span key={l} className="label"><span className="label-dot" aria-hidden="true" style={{ background: colourOf(l) }} />{l}</span>)}
                {m.attachments.length > 0 && <span className="clip">· attachment</span>}
                <span className="snippet"> — {m.snippet}</span>
              </span>
              <time className="date" dateTime={m.created_at}>{shortDate(m.date ?? m.created_at)}</time>
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}
