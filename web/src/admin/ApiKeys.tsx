import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { apiKeysQuery } from '../queries';
import { Section } from './common';
import { Credentials } from './Credentials';
import type { ApiKey } from './types';

export function ApiKeys() {
  const list = useQuery(apiKeysQuery());
  const [name, setName] = useState('');
  return (
    <Section title="API keys" intro="An API key acts for this workspace on the API-key surface (mailboxes, messages, sending).">
      <Credentials<ApiKey>
        queryKey={apiKeysQuery().queryKey}
        title="New API key"
        action="Create API key"
        fields={<>
          <label htmlFor="key-name">Name</label>
          <input id="key-name" value={name} onChange={(e) => setName(e.target.value)} placeholder="CI deploys" maxLength={100} />
        </>}
        create={() => answerOf(api.POST('/app/api/api-keys', { body: { name: name.trim() } }))}
        onCreated={() => setName('')}
        secret={(k) => ({ id: 'new-key', title: `API key ${k.name || k.key_id}`, value: k.api_key })}
        items={list.data?.api_keys}
        error={list.error}
        empty="No API keys yet."
        caption="API keys"
        columns={['Name', 'Id']}
        cells={(k) => <><td>{k.name || <span className="muted">(no name)</span>}</td><td><code>{k.key_id}</code></td></>}
        lastColumn="State"
        rowKey={(k) => k.key_id}
        label={(k) => k.name || k.key_id}
        revoke={(k) => answerOf(api.DELETE('/app/api/api-keys/{key_id}', { params: { path: { key_id: k.key_id } } }))}
      />
    </Section>
  );
}
