import { useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { auditLogQuery } from '../queries';
import { ErrorNote, Section, when } from './common';
import type { AuditEntry } from './types';

/** The families of actions a reader filters by most (docs/operations.md, Audit log). */
const FAMILIES: Array<{ value: string; label: string }> = [
  { value: '', label: 'Every action' },
  { value: 'member.', label: 'Members and roles' },
  { value: 'api_key.', label: 'API keys' },
  { value: 'service_token.', label: 'Service tokens' },
  { value: 'session.', label: 'Sessions' },
  { value: 'user.', label: 'Passwords' },
  { value: 'domain.', label: 'Sending domains' },
  { value: 'webhook.', label: 'Webhooks' },
  { value: 'list.', label: 'Allow and block lists' },
  { value: 'suppression.', label: 'Suppressions' },
  { value: 'workspace.', label: 'The workspace' },
];

function actorText(actor: AuditEntry['actor']): string {
  if (actor.kind === 'operator') return 'Operator (command line)';
  if (actor.kind === 'system') return 'Mailroom';
  const kind = actor.kind === 'api_key' ? 'API key ' : actor.kind === 'service_token' ? 'Service token ' : '';
  return `${kind}${actor.email ?? actor.id ?? ''}`;
}

function detailsText(details: AuditEntry['details']): string {
  return Object.entries(details)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([key, value]) => `${key.replace(/_/g, ' ')}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join('; ');
}

function EntryRow({ entry }: { entry: AuditEntry }) {
  return (
    <tr>
      <td>{when(entry.created_at)}</td>
      <td><code>{entry.action}</code></td>
      <td>{actorText(entry.actor)}</td>
      <td>{entry.ip ?? ''}</td>
      <td>{entry.target ? <>{entry.target.kind} <code>{entry.target.id}</code></> : ''}</td>
      <td>{detailsText(entry.details)}</td>
    </tr>
  );
}

/** Who changed what in the workspace, newest first, filtered by action family and actor, a page at a time. */
export function AuditLog() {
  const [action, setAction] = useState('');
  const [actorInput, setActorInput] = useState('');
  const [actor, setActor] = useState('');
  // The cursors of the pages before this one: "Newer" goes back to the last of them.
  const [cursors, setCursors] = useState<Array<string | undefined>>([]);
  const [before, setBefore] = useState<string | undefined>(undefined);
  const page = useQuery(auditLogQuery({ action, actor }, before));
  const restart = () => {
    setCursors([]);
    setBefore(undefined);
  };
  const applyActor = (e: FormEvent) => {
    e.preventDefault();
    setActor(actorInput.trim());
    restart();
  };
  const older = () => {
    if (!page.data?.next_before) return;
    setCursors([...cursors, before]);
    setBefore(page.data.next_before);
  };
  const newer = () => {
    setBefore(cursors[cursors.length - 1]);
    setCursors(cursors.slice(0, -1));
  };
  return (
    <Section title="Audit log" intro="Who changed what in this workspace: members, credentials, sending domains, webhooks, lists and suppressions. Kept for a year; never a password or a secret.">
      <form className="inline" onSubmit={applyActor} aria-label="Filter the audit log">
        <label htmlFor="audit-action">Action</label>
        <select id="audit-action" value={action} onChange={(e) => { setAction(e.target.value); restart(); }}>
          {FAMILIES.map((f) => <option key={f.value} value={f.value}>{f.label}</option>)}
        </select>
        <label htmlFor="audit-actor">Actor</label>
        <input id="audit-actor" value={actorInput} onChange={(e) => setActorInput(e.target.value)} placeholder="email, usr_…, key_… or operator" />
        <button type="submit">Filter</button>
      </form>
      <ErrorNote error={page.error} />
      {page.data?.entries.length === 0 && <p className="muted">No entries{action || actor ? ' match these filters' : ' yet'}.</p>}
      {page.data && page.data.entries.length > 0 && (
        <table className="admin-table">
          <caption>Page {cursors.length + 1}, newest first</caption>
          <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">Actor</th><th scope="col">Address</th><th scope="col">Target</th><th scope="col">Details</th></tr></thead>
          <tbody>{page.data.entries.map((e) => <EntryRow key={e.audit_id} entry={e} />)}</tbody>
        </table>
      )}
      <div className="inline">
        <button type="button" onClick={newer} disabled={cursors.length === 0}>Newer</button>
        <button type="button" onClick={older} disabled={!page.data?.next_before}>Older</button>
      </div>
    </Section>
  );
}
