import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { adminMailboxesQuery, sendingDomainsQuery, serviceTokensQuery } from '../queries';
import { ConfirmButton, CreateForm, ErrorNote, OnceSecret, Section, when } from './common';
import type { ServiceToken } from './types';

const KEY = serviceTokensQuery().queryKey;

function CreateToken({ onCreated }: { onCreated: (t: ServiceToken) => void }) {
  const domains = useQuery(sendingDomainsQuery());
  const mailboxes = useQuery(adminMailboxesQuery());
  const verified = (domains.data?.sending_domains ?? []).filter((d) => d.status === 'verified');
  const [name, setName] = useState('');
  const [domainId, setDomainId] = useState('');
  const [mailbox, setMailbox] = useState('');
  const domain = verified.find((d) => d.domain_id === domainId) ?? verified[0];
  const inDomain = (mailboxes.data?.mailboxes ?? []).filter((m) => domain && m.address.endsWith(`@${domain.domain}`));
  const from = inDomain.find((m) => m.address === mailbox)?.address ?? inDomain[0]?.address ?? '';
  const create = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/service-tokens', { body: { name: name.trim(), domain_id: domain?.domain_id ?? '', mailbox: from } })),
    onSuccess: (t) => {
      setName('');
      onCreated(t);
    },
  });
  if (domains.error) return <ErrorNote error={domains.error} />;
  return (
    <CreateForm title="New service token" action="Create token" onSubmit={() => create.mutate()} state={create} disabled={!domain || !from}>
      <p className="muted">A token sends mail through the transactional API from one mailbox of a verified domain, and does nothing else.</p>
      <label htmlFor="tok-name">Name</label>
      <input id="tok-name" value={name} onChange={(e) => setName(e.target.value)} placeholder="login codes" maxLength={100} />
      <label htmlFor="tok-domain">Verified domain</label>
      <select id="tok-domain" value={domain?.domain_id ?? ''} onChange={(e) => setDomainId(e.target.value)} disabled={verified.length === 0}>
        {verified.length === 0 && <option value="">No verified domain yet</option>}
        {verified.map((d) => <option key={d.domain_id} value={d.domain_id}>{d.domain}</option>)}
      </select>
      <label htmlFor="tok-mailbox">Mailbox it sends from</label>
      <select id="tok-mailbox" value={from} onChange={(e) => setMailbox(e.target.value)} disabled={inDomain.length === 0}>
        {inDomain.length === 0 && <option value="">No mailbox in this domain yet</option>}
        {inDomain.map((m) => <option key={m.address} value={m.address}>{m.address}</option>)}
      </select>
    </CreateForm>
  );
}

function TokenRow({ token, onSecret }: { token: ServiceToken; onSecret: (t: ServiceToken) => void }) {
  const client = useQueryClient();
  const params = { path: { token_id: token.token_id } };
  const rotate = useMutation({ mutationFn: () => answerOf(api.POST('/app/api/service-tokens/{token_id}/rotate', { params })), onSuccess: onSecret });
  const revoke = useMutation({ mutationFn: () => answerOf(api.DELETE('/app/api/service-tokens/{token_id}', { params })), onSuccess: () => client.invalidateQueries({ queryKey: KEY }) });
  const label = token.name || token.token_id;
  return (
    <tr>
      <td>{token.name || <span className="muted">(no name)</span>}</td>
      <td>{token.mailbox}</td>
      <td>{when(token.created_at)}</td>
      <td>{when(token.last_used_at)}</td>
      <td className="actions">
        <ConfirmButton label="Rotate" name={`Rotate ${label}`} confirm={`Rotate ${label} (the old credential stops now)`} onConfirm={() => rotate.mutate()} />
        <ConfirmButton label="Revoke" name={`Revoke ${label}`} confirm={`Really revoke ${label}`} onConfirm={() => revoke.mutate()} />
        <ErrorNote error={rotate.error ?? revoke.error} />
      </td>
    </tr>
  );
}

export function ServiceTokens() {
  const client = useQueryClient();
  const list = useQuery(serviceTokensQuery());
  const [secret, setSecret] = useState<ServiceToken | null>(null);
  const shown = (t: ServiceToken) => {
    setSecret(t);
    void client.invalidateQueries({ queryKey: KEY });
  };
  return (
    <Section title="Service tokens">
      {secret?.token && <OnceSecret id="new-token" title={`Token ${secret.name || secret.token_id}`} value={secret.token} onDone={() => setSecret(null)} />}
      <CreateToken onCreated={shown} />
      <ErrorNote error={list.error} />
      {list.data?.service_tokens.length === 0 && <p className="muted">No service tokens yet.</p>}
      {list.data && list.data.service_tokens.length > 0 && (
        <table className="admin-table">
          <caption className="visually-hidden">Service tokens</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Mailbox</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead>
          <tbody>{list.data.service_tokens.map((t) => <TokenRow key={t.token_id} token={t} onSecret={shown} />)}</tbody>
        </table>
      )}
    </Section>
  );
}
