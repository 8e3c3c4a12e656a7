import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { answerOf, client as api } from '../api';
import { sendingDomainsQuery } from '../queries';
import { ConfirmButton, CopyField, CreateForm, ErrorNote, Section, when } from './common';
import type { CheckedDomain, DnsRecord, DomainReportFigures, SendingDomain } from './types';

const KEY = sendingDomainsQuery().queryKey;

function RecordRows({ prefix, title, record, note }: { prefix: string; title: string; record: DnsRecord; note?: string }) {
  return (
    <fieldset className="dns-record">
      <legend>{title} ({record.record_type})</legend>
      {note && <p className="muted">{note}</p>}
      <CopyField id={`${prefix}-name`} label={`${title} name`} value={record.record_name} />
      <CopyField id={`${prefix}-value`} label={`${title} value`} value={record.record_value} />
    </fieldset>
  );
}

/** Before any check on this visit: what the domain still needs, in words a person can act on. */
function unchecked(d: SendingDomain): string {
  if (d.status === 'verified') return `Verified ${when(d.verified_at)}. Mail from it is signed with its DKIM key: check DNS to see that the DKIM record is published.`;
  return `Pending: publish the verification TXT record at _mailroom-verification.${d.domain} and the DKIM record, then verify.`;
}

const CHECK_ROWS = [
  ['verification', 'Verification'],
  ['dkim', 'DKIM'],
  ['spf', 'SPF (advice)'],
] as const;

/** Verify's answer: one sentence, then each record with its status and the reason in words. */
function Checks({ checked }: { checked: CheckedDomain }) {
  return (
    <>
      <p className="domain-status" role="status">{checked.summary}</p>
      <table className="admin-table domain-checks">
        <caption>DNS records of {checked.domain} as DNS answered just now</caption>
        <thead><tr><th scope="col">Record</th><th scope="col">Status</th><th scope="col">Name</th><th scope="col">Reason</th></tr></thead>
        <tbody>
          {CHECK_ROWS.map(([key, label]) => {
            const c = checked.checks[key];
            return (
              <tr key={key}>
                <th scope="row">{label}</th>
                <td><span className={`check-status ${c.status}`}>{c.status}</span></td>
                <td className="url">{c.record_name}</td>
                <td>
                  {c.reason}
                  {c.status !== 'ok' && c.found && <span className="found">Found: {c.found.join(' · ')}</span>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

/** The domain's DMARC and TLS report figures of the last 30 days, read when asked for. */
function Reports({ domain }: { domain: SendingDomain }) {
  const figures = useQuery({
    queryKey: ['sending-domains', domain.domain_id, 'reports'],
    queryFn: () => answerOf(api.GET('/app/api/sending-domains/{domain_id}/reports', { params: { path: { domain_id: domain.domain_id } } })),
  });
  const data: DomainReportFigures | undefined = figures.data;
  if (figures.error) return <ErrorNote error={figures.error} />;
  if (!data) return <p className="muted">Reading reports…</p>;
  if (data.dmarc.length === 0 && data.tls.length === 0) {
    return <p className="muted">No DMARC or TLS reports in the last 30 days. Publish a mailbox of this workspace as the rua= address of the domain’s DMARC and TLS-RPT records.</p>;
  }
  return (
    <>
      {data.dmarc.length > 0 && (
        <table className="admin-table domain-reports">
          <caption>DMARC reports of {data.domain}: messages per source</caption>
          <thead><tr><th scope="col">Source IP</th><th scope="col">Messages</th><th scope="col">DMARC pass</th><th scope="col">DKIM pass</th><th scope="col">SPF pass</th><th scope="col">Quarantined</th><th scope="col">Rejected</th></tr></thead>
          <tbody>
            {data.dmarc.map((s) => (
              <tr key={s.source_ip}>
                <th scope="row" className="url">{s.source_ip}</th>
                <td>{s.messages}</td><td>{s.dmarc.pass}</td><td>{s.dkim.pass}</td><td>{s.spf.pass}</td><td>{s.disposition.quarantine}</td><td>{s.disposition.reject}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {data.tls.length > 0 && (
        <table className="admin-table domain-reports">
          <caption>TLS reports of {data.domain}: sessions per policy</caption>
          <thead><tr><th scope="col">Policy</th><th scope="col">Successful</th><th scope="col">Failed</th><th scope="col">Failures</th></tr></thead>
          <tbody>
            {data.tls.map((p) => (
              <tr key={p.policy_type}>
                <th scope="row">{p.policy_type}</th>
                <td>{p.successful}</td><td>{p.failed}</td><td>{p.failure_types.map((f) => `${f.result_type}: ${f.count}`).join(' · ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function DomainCard({ domain, fresh }: { domain: SendingDomain; fresh: SendingDomain | null }) {
  const client = useQueryClient();
  const [checked, setChecked] = useState<CheckedDomain | null>(null);
  const [again, setAgain] = useState<SendingDomain | null>(null);
  const [reports, setReports] = useState(false);
  const params = { path: { domain_id: domain.domain_id } };
  const refresh = () => void client.invalidateQueries({ queryKey: KEY });
  const verify = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/sending-domains/{domain_id}/verify', { params })),
    onSuccess: (answer) => {
      setChecked(answer);
      refresh();
    },
  });
  const regenerate = useMutation({ mutationFn: () => answerOf(api.POST('/app/api/sending-domains/{domain_id}/records', { params })), onSuccess: setAgain });
  const remove = useMutation({ mutationFn: () => answerOf(api.DELETE('/app/api/sending-domains/{domain_id}', { params })), onSuccess: refresh });
  const id = domain.domain_id;
  const verification = again?.verification ?? fresh?.verification;
  const pending = domain.status === 'pending';
  return (
    <li className="card" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{domain.domain} <span className={`status ${domain.status}`}>{domain.status}</span></h3>
      {checked ? <Checks checked={checked} /> : <p className="domain-status" role="status">{unchecked(domain)}</p>}
      {pending && verification && (
        <RecordRows prefix={`${id}-verification`} title="Verification record" record={verification} note={again ? 'A new value: the earlier one no longer verifies.' : undefined} />
      )}
      {pending && !verification && (
        <p className="muted">The verification value is stored hashed and cannot be shown again. Lost it? Make a new one (the earlier one then stops working).</p>
      )}
      <RecordRows prefix={`${id}-dkim`} title="DKIM record" record={domain.dkim} />
      <RecordRows prefix={`${id}-spf`} title="SPF record" record={domain.spf} note="Advice, not required: merge it into an SPF record the domain already has." />
      <div className="inline">
        <button type="button" className="primary" onClick={() => verify.mutate()} disabled={verify.isPending} aria-label={`${pending ? 'Verify' : 'Check DNS of'} ${domain.domain}`}>
          {verify.isPending ? 'Checking DNS…' : pending ? 'Verify' : 'Check DNS'}
        </button>
        {pending && (
          <ConfirmButton label="New verification value" name={`New verification value for ${domain.domain}`} confirm="Make a new value (the earlier one stops working)" onConfirm={() => regenerate.mutate()} />
        )}
        <button type="button" onClick={() => setReports(!reports)} aria-expanded={reports} aria-label={`Reports of ${domain.domain}`}>
          {reports ? 'Hide reports' : 'Reports'}
        </button>
        <ConfirmButton label="Delete" name={`Delete ${domain.domain}`} confirm={`Delete ${domain.domain} for good`} onConfirm={() => remove.mutate()} disabled={remove.isPending} />
      </div>
      {reports && <Reports domain={domain} />}
      <ErrorNote error={verify.error ?? regenerate.error ?? remove.error} />
    </li>
  );
}

export function Domains() {
  const client = useQueryClient();
  const list = useQuery(sendingDomainsQuery());
  const [name, setName] = useState('');
  // The create answer is the only one with the verification record; keep it for this visit of the page.
  const [fresh, setFresh] = useState<SendingDomain | null>(null);
  const create = useMutation({
    mutationFn: () => answerOf(api.POST('/app/api/sending-domains', { body: { domain: name.trim() } })),
    onSuccess: (d) => {
      setFresh(d);
      setName('');
      void client.invalidateQueries({ queryKey: KEY });
    },
  });
  return (
    <Section title="Sending domains" intro="Verify a domain you own to have mailboxes and send mail at it.">
      <CreateForm title="Add a domain" action="Add domain" onSubmit={() => create.mutate()} state={create}>
        <label htmlFor="domain-name">Domain</label>
        <input id="domain-name" required value={name} onChange={(e) => setName(e.target.value)} placeholder="acme.example" />
      </CreateForm>
      {fresh?.verification && list.data?.sending_domains.some((d) => d.domain_id === fresh.domain_id) && (
        <p className="warning" role="status">
          Publish the verification and DKIM TXT records below (SPF is advice). The verification value is shown only now: copy it before leaving this page.
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
