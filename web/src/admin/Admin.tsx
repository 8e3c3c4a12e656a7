import type { MouseEvent, ReactNode } from 'react';
import { client as api } from '../api';
import { navigate } from '../router';
import type { SessionInfo } from '../types';
import { ApiKeys } from './ApiKeys';
import { AppPasswords } from './AppPasswords';
import { AuditLog } from './AuditLog';
import { isManager, roleOf, Section } from './common';
import { Domains } from './Domains';
import { Labels } from './Labels';
import { Lists } from './Lists';
import { Mailboxes } from './Mailboxes';
import { Members } from './Members';
import { Notifications } from './Notifications';
import { Password } from './Password';
import { Retention } from './Retention';
import { ServiceTokens } from './ServiceTokens';
import { Signatures } from './Signatures';
import { Suppressions } from './Suppressions';
import { Usage } from './Usage';
import { Webhooks } from './Webhooks';
import type { Role } from './types';
import './admin.css';

interface AdminSection {
  id: string;
  title: string;
  /** For owners and admins only (the API answers 403 forbidden_role to members): a member sees neither link nor page. */
  managers: boolean;
  render: (ctx: { role: Role | null; session: SessionInfo }) => ReactNode;
}

const SECTIONS: AdminSection[] = [
  { id: 'mailboxes', title: 'Mailboxes', managers: false, render: () => <Mailboxes /> },
  { id: 'signatures', title: 'Signatures', managers: false, render: () => <Signatures /> },
  { id: 'labels', title: 'Labels', managers: false, render: () => <Labels /> },
  { id: 'domains', title: 'Sending domains', managers: true, render: () => <Domains /> },
  { id: 'service-tokens', title: 'Service tokens', managers: true, render: () => <ServiceTokens /> },
  { id: 'api-keys', title: 'API keys', managers: true, render: () => <ApiKeys /> },
  { id: 'app-passwords', title: 'App passwords', managers: false, render: () => <AppPasswords /> },
  { id: 'webhooks', title: 'Webhooks', managers: false, render: () => <Webhooks /> },
  { id: 'lists', title: 'Allow and block lists', managers: false, render: () => <Lists /> },
  { id: 'suppressions', title: 'Suppressions', managers: false, render: () => <Suppressions /> },
  { id: 'usage', title: 'Usage', managers: false, render: () => <Usage /> },
  { id: 'members', title: 'Members and roles', managers: false, render: ({ role, session }) => <Members viewer={role} me={session.user.user_id} /> },
  { id: 'audit-log', title: 'Audit log', managers: true, render: () => <AuditLog /> },
  { id: 'retention', title: 'Retention', managers: false, render: ({ role }) => <Retention role={role} /> },
  { id: 'notifications', title: 'Notifications', managers: false, render: ({ session }) => <Notifications userId={session.user.user_id} /> },
  { id: 'password', title: 'Your password', managers: false, render: () => <Password /> },
];

/**
 * A page the role may not use, reached by its address (decision 703): said so once, here, with nothing to fill in
 * or press, rather than forms whose every request the API would refuse.
 */
function NotAllowed({ title }: { title: string }) {
  return (
    <Section title={title}>
      <p role="alert">You can't manage {title.toLowerCase()}: this page needs the owner or admin role in this workspace. Ask an owner or admin.</p>
    </Section>
  );
}

export const settingsPath = (section = 'mailboxes') => `/settings/${section}`;

function go(e: MouseEvent, to: string) {
  e.preventDefault();
  navigate(to);
}

/** The workspace's settings: one page per section, the ones a member may not use left out of the navigation. */
export function Admin({ session, section, onLogout }: { session: SessionInfo; section: string; onLogout: () => void }) {
  const role = roleOf(session);
  const visible = SECTIONS.filter((s) => !s.managers || isManager(role));
  const current = SECTIONS.find((s) => s.id === (section || 'mailboxes'));
  const workspace = session.workspaces.find((w) => w.workspace_id === session.active_workspace_id);
  async function logout() {
    await api.POST('/app/api/logout').catch(() => undefined);
    onLogout();
  }
  return (
    <div className="shell admin">
      <header className="topbar">
        <a className="brand" href="/" onClick={(e) => go(e, '/')}>Mailroom</a>
        <span className="workspace">{workspace ? `${workspace.name} (${workspace.role})` : 'No workspace'}</span>
        <a href="/" onClick={(e) => go(e, '/')}>Back to mail</a>
        <span className="spacer" />
        <span className="user">{session.user.email}</span>
        <button type="button" onClick={() => void logout()}>Log out</button>
      </header>
      <nav className="sidebar" aria-label="Settings">
        <h2 className="visually-hidden">Settings</h2>
        <ul>
          {visible.map((s) => (
            <li key={s.id}>
              <a href={settingsPath(s.id)} aria-current={s.id === current?.id ? 'page' : undefined} onClick={(e) => go(e, settingsPath(s.id))}>{s.title}</a>
            </li>
          ))}
        </ul>
      </nav>
      <main className="content" id="content">
        {session.active_workspace_id === null && current?.id !== 'password' && current?.id !== 'notifications' ? (
          <p role="alert">You are in no workspace yet: ask an owner to add you.</p>
        ) : current && current.managers && !isManager(role) ? (
          <NotAllowed title={current.title} />
        ) : current ? (
          current.render({ role, session })
        ) : (
          <p role="alert">There is no settings page “{section}”.</p>
        )}
      </main>
    </div>
  );
}
