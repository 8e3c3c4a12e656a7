import type { ReactNode } from 'react';
import { composePath, draftsPath, mailPath, navigate, type Route } from './router';
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

export function Sidebar({ mailboxes, route }: { mailboxes: Mailbox[]; route: MailRoute }) {
  return (
    <nav className="sidebar" aria-label="Mailboxes and folders">
      {route.mailbox && (
        <a className="compose-button button primary" href={composePath(route.mailbox)} onClick={(e) => { e.preventDefault(); if (route.mailbox) navigate(composePath(route.mailbox)); }}>
          Compose
        </a>
      )}
      <h2 className="visually-hidden">Mailboxes</h2>
      {mailboxes.length === 0 && <p className="muted">No mailboxes in this workspace yet.</p>}
      <ul className="mailboxes">
        {mailboxes.map((m) => {
          const active = m.address === route.mailbox;
          return (
            <li key={m.address}>
              <Link to={mailPath(m.address, 'inbox')} current={active && route.view.kind === 'folder' && route.folder === 'inbox' && !route.q} className="mailbox">
                <span className="address" title={m.address}>{m.address}</span>
                {m.unread_count > 0 && <span className="count" aria-label={`${m.unread_count} unread`}>{m.unread_count}</span>}
              </Link>
              {active && (
                <ul className="folders">
                  {FOLDERS.map((f) => (
                    <li key={f}>
                      <Link to={mailPath(m.address, f)} current={route.view.kind === 'folder' && route.folder === f && !route.q}>{FOLDER_NAMES[f]}</Link>
                    </li>
                  ))}
                  <li>
                    <Link to={draftsPath(m.address)} current={route.view.kind === 'drafts'}>Drafts</Link>
                  </li>
                </ul>
              )}
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
