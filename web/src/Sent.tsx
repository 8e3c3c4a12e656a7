import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { ApiError } from './api';
import { longDate, shortDate } from './format';
import { mailPath, navigate, type Route } from './router';
import { cancelScheduled, SENT_PAGE_SIZE, useSentItem, useSentPage, type Attempt, type SendAnswer, type SentItem } from './sending';
import type { FullMessage } from './types';

type MailRoute = Extract<Route, { page: 'mail' }>;

/** What the API answered to the sends of this tab, shown on the sent message's page. */
const answers = new Map<string, SendAnswer>();

export function rememberSent(answer: SendAnswer): void {
  answers.set(answer.message_id, answer);
}

const STATUS_TEXT: Record<string, string> = {
  scheduled: 'Scheduled',
  cancelled: 'Cancelled',
  queued: 'Queued',
  processing: 'Sending',
  accepted: 'Accepted',
  failed: 'Failed',
  unknown: 'Unknown',
  pending: 'Pending',
};

export function StatusBadge({ status }: { status: string }) {
  return <span className={`status status-${status}`}>{STATUS_TEXT[status] ?? status}</span>;
}

/** The sent folder with each message's delivery status (GET /app/api/sent). */
export function SentList(props: { route: MailRoute; selected: number; onSelect: (index: number) => void; onOpen: (id: string) => void }) {
  const { route, selected } = props;
  const page = useSentPage(route.mailbox, route.offset);
  const rows = useRef<Array<HTMLAnchorElement | null>>([]);
  useEffect(() => {
    if (document.activeElement?.closest('.messages')) rows.current[selected]?.focus();
  }, [selected]);
  if (page.isPending) return <p className="loading" role="status">Loading sent mail…</p>;
  if (page.isError) return <p role="alert" className="error">{page.error instanceof ApiError ? page.error.detail : 'the server did not answer'}</p>;
  const data = page.data;
  const to = data.offset + data.messages.length;
  const go = (offset: number) => route.mailbox && navigate(mailPath(route.mailbox, 'sent', null, '', offset));
  return (
    <section aria-labelledby="list-title">
      <div className="list-head">
        <h1 id="list-title" className="list-title">Sent</h1>
        <div className="pager">
          <span>{data.total === 0 ? 0 : data.offset + 1}–{to} of {data.total}</span>
          <button type="button" disabled={data.offset === 0} onClick={() => go(Math.max(data.offset - SENT_PAGE_SIZE, 0))} aria-label="Newer messages">‹</button>
          <button type="button" disabled={to >= data.total} onClick={() => go(data.offset + SENT_PAGE_SIZE)} aria-label="Older messages">›</button>
        </div>
      </div>
      {data.messages.length === 0 && <p className="muted empty">Nothing sent from this mailbox yet.</p>}
      <ul className="messages sent-list" aria-label="Sent messages">
        {data.messages.map((m, i) => (
          <li key={m.message_id} className={`row ${i === selected ? 'selected' : ''}`} data-message-id={m.message_id}>
            <a ref={(el) => { rows.current[i] = el; }} href={mailPath(m.mailbox, 'sent', m.message_id)} tabIndex={i === selected ? 0 : -1}
              aria-current={i === selected ? 'true' : undefined} onFocus={() => props.onSelect(i)}
              onClick={(e) => { e.preventDefault(); props.onOpen(m.message_id); }}>
              <span className="from">To: {m.to.map((t) => t.address).join(', ') || '(bcc only)'}</span>
              <span className="subject">
                <StatusBadge status={m.status} /> {m.subject || '(no subject)'}
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

function Attempts({ attempts }: { attempts: Attempt[] }) {
  if (attempts.length === 0) return <p className="muted">No attempt yet.</p>;
  return (
    <ol className="attempts" aria-label="Delivery attempts">
      {attempts.map((a, i) => (
        <li key={`${a.at}-${i}`}>
          <time dateTime={a.at}>{longDate(a.at)}</time> · <strong>{a.outcome}</strong>
          {a.mx && <> · {a.mx}</>} · {a.recipients.join(', ')}
          {a.tls && <> · {a.tls.version}, certificate {a.tls.verified ? 'verified' : 'not verified'}</>}
          {a.mta_sts && <> · MTA-STS {a.mta_sts}</>}
          {a.response && <><br /><code>{a.response}</code></>}
        </li>
      ))}
    </ol>
  );
}

function Recipients({ item }: { item: SentItem }) {
  if (item.recipients.length === 0) return null;
  return (
    <div className="table-wrap">
      <table className="recipients-table">
        <caption className="visually-hidden">Delivery status per recipient</caption>
        <thead><tr><th scope="col">Recipient</th><th scope="col">Status</th><th scope="col">Last reply</th><th scope="col">Mail server</th></tr></thead>
        <tbody>
          {item.recipients.map((r) => (
            <tr key={r.address} data-recipient={r.address}>
              <th scope="row">{r.address}</th>
              <td><StatusBadge status={r.status} /></td>
              <td>{r.response ? <code>{r.response}</code> : '—'}</td>
              <td>{r.mx ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A scheduled message: when it leaves, and a Cancel button while it has not. */
function Scheduled({ messageId, sendAt }: { messageId: string; sendAt: string | undefined }) {
  const client = useQueryClient();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function cancel() {
    setBusy(true);
    setError(null);
    try {
      await cancelScheduled(messageId);
    } catch (err) {
      setError(err instanceof ApiError ? err.detail : 'the server did not answer; try again');
    }
    setBusy(false);
    await client.invalidateQueries({ queryKey: ['sent'] });
    await client.invalidateQueries({ queryKey: ['message', messageId] });
  }
  return (
    <div className="scheduled">
      <p>Scheduled for {sendAt ? <time dateTime={sendAt}>{longDate(sendAt)}</time> : 'later'}.</p>
      <button type="button" onClick={() => void cancel()} disabled={busy}>Cancel sending</button>
      {error && <p className="error" role="alert">{error}</p>}
    </div>
  );
}

/**
 * The delivery of an outbound message: its status, each recipient's and every attempt. The event stream's
 * message.* events invalidate it, so it follows the delivery live.
 */
export function Delivery({ message }: { message: FullMessage }) {
  const item = useSentItem(message);
  const answer = answers.get(message.message_id);
  const status = item.data?.status ?? message.status ?? 'unknown';
  return (
    <section className="delivery" aria-labelledby="delivery-title">
      <h2 id="delivery-title">Delivery</h2>
      {answer && <p className="notice">{answer.status === 'scheduled' ? 'Scheduled: the server will send it at its time.' : `Sent: the server took it (${answer.status}).`}</p>}
      {answer?.suppressed && <p className="notice">Not sent to {answer.suppressed.join(', ')}: on this workspace's suppression list (Settings → Suppressions).</p>}
      <p role="status" aria-live="polite" className="delivery-status">Status: <StatusBadge status={status} /></p>
      {status === 'scheduled' && <Scheduled messageId={message.message_id} sendAt={item.data?.send_at ?? message.send_at} />}
      {item.data?.last_error && <p className="error">Last error: <code>{item.data.last_error}</code></p>}
      {item.isError && <p className="error">Could not load the delivery state: {item.error instanceof ApiError ? item.error.detail : 'no answer'}</p>}
      {item.data && <Recipients item={item.data} />}
      <h3>Attempts</h3>
      <Attempts attempts={item.data?.attempts ?? message.events ?? []} />
    </section>
  );
}
