import { useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent, type RefObject } from 'react';
import { ApiError, answerOf, client as api } from './api';
import { mailPath, navigate, type Route } from './router';
import type { SessionInfo } from './types';

type MailRoute = Extract<Route, { page: 'mail' }>;

function WorkspaceSwitcher({ session }: { session: SessionInfo }) {
  const client = useQueryClient();
  if (session.workspaces.length < 2) {
    return <span className="workspace">{session.workspaces[0]?.name ?? 'No workspace'}</span>;
  }
  async function select(workspaceId: string) {
    const info = await answerOf(api.POST('/app/api/workspaces/select', { body: { workspace_id: workspaceId } }));
    client.removeQueries({ predicate: (q) => q.queryKey[0] !== 'session' });
    client.setQueriesData({ queryKey: ['session'] }, info);
    navigate('/');
  }
  return (
    <>
      <label htmlFor="workspace" className="visually-hidden">Workspace</label>
      <select id="workspace" value={session.active_workspace_id ?? ''} onChange={(e) => void select(e.target.value)}>
        {session.workspaces.map((w) => (
          <option key={w.workspace_id} value={w.workspace_id}>{w.name} ({w.role})</option>
        ))}
      </select>
    </>
  );
}

/** The search box; a malformed query's error (with its position) shows right under it. */
function Search({ route, searchRef, error }: { route: MailRoute; searchRef: RefObject<HTMLInputElement | null>; error: Error | null }) {
  const [text, setText] = useState(route.q);
  const invalid = error instanceof ApiError && error.code === 'invalid_query' ? error : null;
  function submit(event: FormEvent) {
    event.preventDefault();
    if (route.mailbox) navigate(mailPath(route.mailbox, route.folder, null, text.trim()));
    searchRef.current?.blur();
  }
  return (
    <form role="search" className="search" onSubmit={submit}>
      <label htmlFor="search" className="visually-hidden">Search mail</label>
      <input
        id="search"
        ref={searchRef}
        type="search"
        placeholder="Search mail (from:alice has:attachment)"
        value={text}
        onChange={(e) => setText(e.target.value)}
        aria-invalid={invalid !== null}
        aria-describedby={invalid ? 'search-error' : undefined}
      />
      {invalid && (
        <p id="search-error" className="error search-error" role="alert">
          {invalid.detail}
          {invalid.position !== null && (
            <code className="query-mark" aria-hidden="true">
              {route.q.slice(0, invalid.position)}
              <mark>{route.q.slice(invalid.position, invalid.position + 1) || ' '}</mark>
              {route.q.slice(invalid.position + 1)}
            </code>
          )}
        </p>
      )}
    </form>
  );
}

export function Header(props: {
  session: SessionInfo;
  route: MailRoute;
  live: boolean;
  searchRef: RefObject<HTMLInputElement | null>;
  searchError: Error | null;
  onLogout: () => void;
  onHelp: () => void;
}) {
  return (
    <header className="topbar">
      <a className="brand" href="/" onClick={(e) => { e.preventDefault(); navigate('/'); }}>Mailroom</a>
      <WorkspaceSwitcher session={props.session} />
      <Search key={props.route.q} route={props.route} searchRef={props.searchRef} error={props.searchError} />
      <span className={`live ${props.live ? 'on' : ''}`} role="status" title={props.live ? 'New mail shows as it arrives' : 'Reconnecting to live updates'}>
        {props.live ? 'Live' : 'Offline'}
      </span>
      <button type="button" onClick={props.onHelp} aria-label="Keyboard shortcuts">?</button>
      <a href="/settings/mailboxes" onClick={(e) => { e.preventDefault(); navigate('/settings/mailboxes'); }}>Settings</a>
      <span className="user">{props.session.user.email}</span>
      <button type="button" onClick={props.onLogout}>Log out</button>
    </header>
  );
}
