import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { apiKeysQuery } from '../queries';
import { ConfirmButton, CreateForm, ErrorNote, OnceSecret, Section, when } from './common';
import type { ApiKey } from './types';

const KEY = apiKeysQuery().queryKey;

function KeyRow({ apiKey }: { apiKey: ApiKey }) {
  const client = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => answerOf(api.DELETE('/app/api/api-keys/{key_id}', { params: { path: { key_id: apiKey.key_id } } })),
    onSuccess: () => client.invalidateQueries({ queryKey: KEY }),
  });
  const label = apiKey.name || apiKey.key_id;
  return (
    <tr>
      <td>{apiKey.name || <span className="muted">(no name)</span>}</td>
      <td><code>{apiKey.key_id}</code></td>
      <td>{when(apiKey.created_at)}</td>
      <td>{when(apiKey.last_used_at)}</td>
      <td className="actions">
        {apiKey.revoked_at ? `Revoked ${when(apiKey.revoked_at)}` : <ConfirmButton label="Revoke" name={`Revoke ${label}`} confirm={`Really revoke ${label}`} onConfirm={() => revoke.mutate()} />}
        <ErrorNote error={revoke.error} />
      </td>
    </tr>
  );
}

export function ApiKeys() {
  const client = useQueryClient();
  const list = useQuery(apiKeysQuery());
  const [name, setName] = useState('');
  const [created, setCreated] = useState<ApiKey | null>(null);
  const create = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/api-keys', { body: { name: name.trim() } })),
    onSuccess: (k) => {
      setCreated(k);
      setName('');
      void client.invalidateQueries({ queryKey: KEY });
    },
  });
  return (
    <Section title="API keys" intro="An API key acts for this workspace on the API-key surface (mailboxes, messages, sending).">
      {created?.api_key && <OnceSecret id="new-key" title={`API key ${created.name || created.key_id}`} value={created.api_key} onDone={() => setCreated(null)} />}
      <CreateForm title="New API key" action="Create API key" onSubmit={() => create.mutate()} state={create}>
        <label htmlFor="key-name">Name</label>
        <input id="key-name" value={name} onChange={(e) => setName(e.target.value)} placeholder="CI deploys" maxLength={100} />
      </CreateForm>
      <ErrorNote error={list.error} />
      {list.data?.api_keys.length === 0 && <p className="muted">No API keys yet.</p>}
      {list.data && list.data.api_keys.length > 0 && (
        <table className="admin-table">
          <caption className="visually-hidden">API keys</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th></tr></thead>
          <tbody>{list.data.api_keys.map((k) => <KeyRow key={k.key_id} apiKey={k} />)}</tbody>
        </table>
      )}
    </Section>
  );
}
