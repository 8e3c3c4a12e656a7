import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { DEFAULT_LABEL_COLOUR, labelsQuery } from './queries';
import { composePath, crossPath, draftsPath, mailPath, navigate, type Route } from './router';
import { FOLDERS, type Folder, type Mailbox } from './types';

type MailRoute = Extract<Route, { page: 'mail' }>;

export const FOLDER_NAMES: Record<Folder, string> = { inbox: 'Inbox', archive: 'Archive', sent: 'Sent', spam: 'Spam', trash: 'Trash' };

function Link({ to, current, children, className }: { to: string; current: boolean; children: ReactNode; className?: string }) {
  return (
    <a href={to} className={className} aria-current={current ? 'page' : undefined} onClick={(e) => { e.preventDefault(); navigate(to); }}>
      {children}
    </a>
  );
}

const Count = ({ n }: { n: number }) => (n > 0 ? <span className="count" aria-label={`${n} unread`}>{n}</span> : null);

/** One mailbox with its folders and drafts: every mailbox of the workspace is listed so, one after another, as Fastmail lists folders. */
function MailboxEntry({ mailbox, route }: { mailbox: Mailbox; route: MailRoute }) {
  const active = mailbox.address === route.mailbox;
  const atFolder = (f: Folder) => active && route.view.kind === 'folder' && route.folder === f && !route.q;
  return (
    <li>
      <Link to={mailPath(mailbox.address, 'inbox')} current={atFolder('inbox')} className="mailbox">
        <span className="address" title={mailbox.address}>{mailbox.address}</span>
        <Count n={mailbox.unread_count} />
      </Link>
      <ul className="folders" aria-label={`Folders of ${mailbox.address}`}>
        {FOLDERS.map((f) => (
          <li key={f}>
            <Link to={mailPath(mailbox.address, f)} current={atFolder(f)}>{FOLDER_NAMES[f]}</Link>
          </li>
        ))}
        <li>
          <Link to={draftsPath(mailbox.address)} current={active && route.view.kind === 'drafts'}>Drafts</Link>
        </li>
      </ul>
    </li>
  );
}

/** The workspace's labels, each with its colour and unread count (bounded on the server), opening its messages. */
function Labels({ route }: { route: MailRoute }) {
  const labels = useQuery(labelsQuery());
  const list = labels.data?.labels ?? [];
  if (list.length === 0) return null;
  return (
    <>
      <h3 id="labels-heading">Labels</h3>
      <ul aria-labelledby="labels-heading">
        {list.map((l) => (
          <li key={l.name}>
            <Link to={crossPath({ kind: 'label', label: l.name })} current={route.view.kind === 'label' && route.view.label === l.name && !route.messageId} className="label-link">
              <span className="label-dot" aria-hidden="true" style={{ background: l.colour ?? DEFAULT_LABEL_COLOUR }} />
              <span className="label-name">{l.name}</span>
              <Count n={l.unread} />
            </Link>
          </li>
        ))}
      </ul>
    </>
  );
}

export function Sidebar({ mailboxes, route }: { mailboxes: Mailbox[]; route: MailRoute }) {
  const from = route.mailbox ?? mailboxes[0]?.address ?? null;
  const at = (kind: 'all' | 'starred') => route.view.kind === kind && !route.messageId;
  return (
    <nav className="sidebar" aria-label="Mailboxes and folders">
      {from && (
        <a className="compose-button button primary" href={composePath(from)} onClick={(e) => { e.preventDefault(); navigate(composePath(from)); }}>
          Compose
        </a>
      )}
      {mailboxes.length > 1 && (
        <ul className="views">
          <li><Link to={crossPath({ kind: 'all' })} current={at('all')}>All inboxes</Link></li>
        </ul>
      )}
      <ul className="views">
        <li><Link to={crossPath({ kind: 'starred' })} current={at('starred')}>Starred</Link></li>
      </ul>
      <h2 className="visually-hidden">Mailboxes</h2>
      {mailboxes.length === 0 && <p className="muted">No mailboxes in this workspace yet.</p>}
      <ul className="mailboxes">
        {mailboxes.map((m) => <MailboxEntry key={m.address} mailbox={m} route={route} />)}
      </ul>
      <Labels route={route} />
    </nav>
  );
}
