import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ApiError } from './api';
import { threadDetailQuery, useMoveThread } from './conversations';
import { longDate, person, shortDate } from './format';
import { MessageBody } from './MessageBody';
import { invalidateMail, useMessage } from './queries';
import { composePath, navigate, type ComposeMode } from './router';
import type { Folder, Message } from './types';
import './conversations.css';

const MODES: Array<[ComposeMode, string]> = [['reply', 'Reply'], ['all', 'Reply all'], ['forward', 'Forward']];

/** One message of the stack, open: its header, body and its own reply and forward (opening it marks it read). */
function OpenMessage({ item, onCollapse }: { item: Message; onCollapse: () => void }) {
  const client = useQueryClient();
  const message = useMessage(item.message_id);
  const loaded = message.data?.message_id;
  const wasUnread = !item.read;
  // Opening an unread message marks it read: refresh the list's counts once it is loaded.
  useEffect(() => {
    if (loaded && wasUnread) void invalidateMail(client);
  }, [loaded, wasUnread, client]);
  const from = person(item.from);
  return (
    <article className="open-message" aria-label={`${from}, ${longDate(item.date ?? item.created_at)}`}>
      <button type="button" className="collapsed-head" aria-expanded="true" onClick={onCollapse}>
        <strong>{from}</strong>
        <span className="snippet">to {item.to.map((t) => t.address).join(', ') || '—'} · {item.folder}</span>
        <time dateTime={item.created_at}>{longDate(item.date ?? item.created_at)}</time>
      </button>
      {message.isPending && <p className="loading" role="status">Loading message…</p>}
      {message.isError && <p role="alert" className="error">{message.error instanceof ApiError ? message.error.detail : 'the message could not be loaded'}</p>}
      {message.data && <MessageBody message={message.data} />}
      <div className="toolbar" role="toolbar" aria-label={`Actions for the message from ${from}`}>
        {MODES.map(([mode, name]) => (
          <button key={mode} type="button" onClick={() => navigate(composePath(item.mailbox, { source: item.message_id, mode }))}>{name}</button>
        ))}
      </div>
    </article>
  );
}

/** One message of the stack, collapsed to a line: sender, snippet, date; a button, so a click or Enter opens it. */
function CollapsedMessage({ item, onExpand }: { item: Message; onExpand: () => void }) {
  return (
    <button type="button" className="collapsed-head" aria-expanded="false" onClick={onExpand}>
      <strong>{person(item.from)}</strong>
      <span className="snippet">{item.snippet}</span>
      <time dateTime={item.created_at}>{shortDate(item.date ?? item.created_at)}</time>
    </button>
  );
}

/**
 * A conversation: its messages stacked oldest first. Read ones are collapsed, the unread ones and the newest open,
 * as first seen: a message read by opening it here stays open until the reader collapses it.
 */
export function ThreadView({ threadId, folder, onBack }: { threadId: string; folder: Folder; onBack: () => void }) {
  const thread = useQuery(threadDetailQuery(threadId));
  const [firstSeen, setFirstSeen] = useState<ReadonlyMap<string, boolean>>(new Map());
  const [toggled, setToggled] = useState<ReadonlySet<string>>(new Set());
  const move = useMoveThread();
  if (thread.isPending) return <p className="loading" role="status">Loading conversation…</p>;
  if (thread.isError) return <p role="alert" className="error">{thread.error instanceof ApiError ? thread.error.detail : 'the conversation could not be loaded'}</p>;
  const messages = thread.data.messages;
  const newest = messages[messages.length - 1]?.message_id;
  const opensFirst = (m: Message) => !m.read || m.message_id === newest;
  const unseen = messages.filter((m) => !firstSeen.has(m.message_id));
  // Each message's first state is kept (derived state, set while rendering), so being read here does not close it.
  if (unseen.length > 0) setFirstSeen((seen) => new Map([...seen, ...unseen.map((m): [string, boolean] => [m.message_id, opensFirst(m)])]));
  const isOpen = (m: Message) => (firstSeen.get(m.message_id) ?? opensFirst(m)) !== toggled.has(m.message_id);
  const toggle = (id: string) => setToggled((s) => { const next = new Set(s); if (!next.delete(id)) next.add(id); return next; });
  const leave = (to: Folder) => void move(threadId, folder, to).then(onBack, () => undefined);
  return (
    <article className="message" aria-labelledby="thread-subject">
      <div className="toolbar" role="toolbar" aria-label="Conversation actions">
        <button type="button" onClick={onBack}>← Back</button>
        {folder !== 'archive' && <button type="button" onClick={() => leave('archive')}>Archive conversation</button>}
        {folder !== 'trash' && <button type="button" onClick={() => leave('trash')}>Delete conversation</button>}
      </div>
      <h1 id="thread-subject">{thread.data.subject || '(no subject)'}</h1>
      <p className="muted">{thread.data.message_count} messages</p>
      <ol className="stack" aria-label="Messages of the conversation">
        {messages.map((m) => (
          <li key={m.message_id} className={m.read ? '' : 'unread'}>
            {isOpen(m) ? <OpenMessage item={m} onCollapse={() => toggle(m.message_id)} /> : <CollapsedMessage item={m} onExpand={() => toggle(m.message_id)} />}
          </li>
        ))}
      </ol>
    </article>
  );
}
