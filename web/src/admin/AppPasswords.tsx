import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { adminMailboxesQuery, appPasswordsQuery } from '../queries';
import { Section } from './common';
import { Credentials } from './Credentials';
import type { AppPassword, MailClientServers } from './types';

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
  const list = useQuery(appPasswordsQuery());
  const mailboxes = useQuery(adminMailboxesQuery());
  const [name, setName] = useState('');
  const [mailbox, setMailbox] = useState('');
  const addresses = (mailboxes.data?.mailboxes ?? []).map((m) => m.address);
  const chosen = addresses.includes(mailbox) ? mailbox : (addresses[0] ?? '');
  return (
    <Section title="App passwords" intro="A mail client (phone, Thunderbird, Apple Mail) logs in with the mailbox address as user name and an app password made for it. Make one per client: revoking it disconnects that client only.">
      <Credentials<AppPassword>
        queryKey={appPasswordsQuery().queryKey}
        title="New app password"
        action="Create app password"
        disabled={chosen === '' || name.trim() === ''}
        fields={<>
          <label htmlFor="app-password-name">Name</label>
          <input id="app-password-name" value={name} onChange={(e) => setName(e.target.value)} placeholder="Phone" maxLength={100} />
          <label htmlFor="app-password-mailbox">Mailbox</label>
          <select id="app-password-mailbox" value={chosen} onChange={(e) => setMailbox(e.target.value)} disabled={addresses.length === 0}>
            {addresses.length === 0 && <option value="">No mailbox yet</option>}
            {addresses.map((a) => <option key={a} value={a}>{a}</option>)}
          </select>
        </>}
        create={() => answerOf(api.POST('/app/api/app-passwords', { body: { name: name.trim(), mailbox: chosen } }))}
        onCreated={() => setName('')}
        secret={(p) => ({ id: 'new-app-password', title: `App password ${p.name} for ${p.mailbox}`, value: p.password })}
        beforeList={<>
          <h2>Servers</h2>
          {list.data && <Servers servers={list.data.servers} />}
          <h2>Your app passwords</h2>
        </>}
        items={list.data?.app_passwords}
        error={list.error}
        empty="No app passwords yet."
        caption="App passwords"
        columns={['Name', 'Mailbox']}
        cells={(p) => <><td>{p.name}</td><td>{p.mailbox}</td></>}
        lastColumn="Actions"
        rowKey={(p) => p.app_password_id}
        label={(p) => p.name}
        revoke={(p) => answerOf(api.DELETE('/app/api/app-passwords/{app_password_id}', { params: { path: { app_password_id: p.app_password_id } } }))}
      />
    </Section>
  );
}
