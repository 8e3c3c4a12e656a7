import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { adminMailboxesQuery, appPasswordsQuery } from '../queries';
import { ConfirmButton, CreateForm, ErrorNote, OnceSecret, Section, when } from './common';
import type { AppPassword, MailClientServers } from './types';

const KEY = appPasswordsQuery().queryKey;

function PasswordRow({ password }: { password: AppPassword }) {
  const client = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => answerOf(api.DELETE('/app/api/app-passwords/{app_password_id}', { params: { path: { app_password_id: password.app_password_id } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: KEY }),
  });
  return (
    <tr>
      <td>{password.name}</td>
      <td>{password.mailbox}</td>
      <td>{when(password.created_at)}</td>
      <td>{when(password.last_used_at)}</td>
      <td className="actions">
        <ConfirmButton label="Revoke" name={`Revoke ${password.name}`} confirm={`Really revoke ${password.name}`} onConfirm={() => revoke.mutate()} />
        <ErrorNote error={revoke.error} />
      </td>
    </tr>
  );
}

/** Where mail clients connect: each listener that is on, with its security. */
function Servers({ servers }: { servers: MailClientServers }) {
  const rows = [
    { name: 'IMAP', port: servers.imap_port, security: 'STARTTLS' },
    { name: 'IMAP', port: servers.imaps_port, security: 'SSL/TLS' },
    { name: 'SMTP (sending)', port: servers.submission_port, security: 'STARTTLS' },
    { name: 'SMTP (sending)', port: servers.submissions_port, security: 'SSL/TLS' },
  ].filter((r) => r.port !== null);
  if (rows.length === 0) return <p className="muted">No mail-client server is turned on in this service yet.</p>;
  return (
    <table className="admin-table" aria-label="Mail client servers">
      <thead><tr><th scope="col">Protocol</th><th scope="col">Server</th><th scope="col">Port</th><th scope="col">Security</th></tr></thead>
      <tbody>
        {rows.map((r) => (
          <tr key={`${r.name}-${r.port}`}><td>{r.name}</td><td><code>{servers.host}</code></td><td>{r.port}</td><td>{r.security}</td></tr>
        ))}
      </tbody>
    </table>
  );
}

export function AppPasswords() {
  const client = useQueryClient();
  const list = useQuery(appPasswordsQuery());
  const mailboxes = useQuery(adminMailboxesQuery());
  const [name, setName] = useState('');
  const [mailbox, setMailbox] = useState('');
  const [created, setCreated] = useState<AppPassword | null>(null);
  const addresses = (mailboxes.data?.mailboxes ?? []).map((m) => m.address);
  const chosen = addresses.includes(mailbox) ? mailbox : (addresses[0] ?? '');
  const create = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/app-passwords', { body: { name: name.trim(), mailbox: chosen } })),
    onSuccess: (made) => {
      setCreated(made);
      setName('');
      void client.invalidateQueries({ queryKey: KEY });
    },
  });
  return (
    <Section title="App passwords" intro="A mail client (phone, Thunderbird, Apple Mail) logs in with the mailbox address as user name and an app password made for it. Make one per client: revoking it disconnects that client only.">
      {created?.password && <OnceSecret id="new-app-password" title={`App password ${created.name} for ${created.mailbox}`} value={created.password} onDone={() => setCreated(null)} />}
      <CreateForm title="New app password" action="Create app password" onSubmit={() => create.mutate()} state={create} disabled={chosen === '' || name.trim() === ''}>
        <label htmlFor="app-password-name">Name</label>
        <input id="app-password-name" value={name} onChange={(e) => setName(e.target.value)} placeholder="Phone" maxLength={100} />
        <label htmlFor="app-password-mailbox">Mailbox</label>
        <select id="app-password-mailbox" value={chosen} onChange={(e) => setMailbox(e.target.value)} disabled={addresses.length === 0}>
          {addresses.length === 0 && <option value="">No mailbox yet</option>}
          {addresses.map((a) => <option key={a} value={a}>{a}</option>)}
        </select>
      </CreateForm>
      <h2>Servers</h2>
      {list.data && <Servers servers={list.data.servers} />}
      <h2>Your app passwords</h2>
      <ErrorNote error={list.error} />
      {list.data?.app_passwords.length === 0 && <p className="muted">No app passwords yet.</p>}
      {list.data && list.data.app_passwords.length > 0 && (
        <table className="admin-table">
          <caption className="visually-hidden">App passwords</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Mailbox</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead>
          <tbody>{list.data.app_passwords.map((p) => <PasswordRow key={p.app_password_id} password={p} />)}</tbody>
        </table>
      )}
    </Section>
  );
}
