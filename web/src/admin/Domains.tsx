import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api } from '../api';
import { CopyField, ErrorNote, Section, when } from './common';
import type { DnsRecord, SendingDomain } from './types';

const KEY = ['sending-domains'];

function RecordRows({ prefix, title, record }: { prefix: string; title: string; record: DnsRecord }) {
  return (
    <fieldset className="dns-record">
      <legend>{title} ({record.record_type})</legend>
      <CopyField id={`${prefix}-name`} label={`${title} name`} value={record.record_name} />
      <CopyField id={`${prefix}-value`} label={`${title} value`} value={record.record_value} />
    </fieldset>
  );
}

/** What the domain still lacks, in words a person can act on. */
function missing(d: SendingDomain, checked: boolean): string {
  if (d.status === 'verified') return `Verified ${when(d.verified_at)}. Mail from it is signed with its DKIM key: keep the DKIM record published.`;
  const name = `_mailroom-verification.${d.domain}`;
  return checked
    ? `Still pending: no TXT record at ${name} holds this domain's verification value yet. Publish it (DNS can take a while to show) and verify again.`
    : `Pending: publish the verification TXT record at ${name} and the DKIM record, then verify.`;
}

function DomainCard({ domain, fresh }: { domain: SendingDomain; fresh: SendingDomain | null }) {
  const client = useQueryClient();
  const [checked, setChecked] = useState(false);
  const verify = useMutation({
    mutationFn: () => api<SendingDomain>(`/sending-domains/${encodeURIComponent(domain.domain_id)}/verify`, { method: 'POST' }),
    onSuccess: () => {
      setChecked(true);
      void client.invalidateQueries({ queryKey: KEY });
    },
  });
  const id = domain.domain_id;
  return (
    <li className="card" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{domain.domain} <span className={`status ${domain.status}`}>{domain.status}</span></h3>
      <p className="domain-status" role="status">{missing(domain, checked)}</p>
      {fresh?.verification && <RecordRows prefix={`${id}-verification`} title="Verification record" record={fresh.verification} />}
      {domain.status === 'pending' && !fresh?.verification && (
        <p className="muted">The verification value was shown when the domain was created; it is stored hashed and cannot be shown again.</p>
      )}
      <RecordRows prefix={`${id}-dkim`} title="DKIM record" record={domain.dkim} />
      {domain.status === 'pending' && (
        <button type="button" className="primary" onClick={() => verify.mutate()} disabled={verify.isPending} aria-label={`Verify ${domain.domain}`}>
          {verify.isPending ? 'Checking DNS…' : 'Verify'}
        </button>
      )}
      <ErrorNote error={verify.error} />
    </li>
  );
}

export function Domains() {
  const client = useQueryClient();
  const list = useQuery({ queryKey: KEY, queryFn: () => api<{ sending_domains: SendingDomain[] }>('/sending-domains') });
  const [name, setName] = useState('');
  // The create answer is the only one with the verification record; keep it for this visit of the page.
  const [fresh, setFresh] = useState<SendingDomain | null>(null);
  const create = useMutation({
    mutationFn: () => api<SendingDomain>('/sending-domains', { method: 'POST', body: { domain: name.trim() } }),
    onSuccess: (d) => {
      setFresh(d);
      setName('');
      void client.invalidateQueries({ queryKey: KEY });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <Section title="Sending domains" intro="Verify a domain you own to have mailboxes and send mail at it.">
      <form className="admin-form" onSubmit={submit}>
        <h2>Add a domain</h2>
        <label htmlFor="domain-name">Domain</label>
        <input id="domain-name" required value={name} onChange={(e) => setName(e.target.value)} placeholder="acme.example" />
        <button type="submit" className="primary" disabled={create.isPending}>Add domain</button>
        <ErrorNote error={create.error} />
      </form>
      {fresh?.verification && (
        <p className="warning" role="status">
          Publish both TXT records below. The verification value is shown only now: copy it before leaving this page.
        </p>
      )}
      <ErrorNote error={list.error} />
      {list.data?.sending_domains.length === 0 && <p className="muted">No sending domains yet.</p>}
      <ul className="cards">
        {list.data?.sending_domains.map((d) => (
          <DomainCard key={d.domain_id} domain={d} fresh={fresh?.domain_id === d.domain_id ? fresh : null} />
        ))}
      </ul>
    </Section>
  );
}
