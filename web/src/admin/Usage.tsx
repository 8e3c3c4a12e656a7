import { useQuery } from '@tanstack/react-query';
import { usageQuery } from '../queries';
import { ErrorNote, Section } from './common';

type Quota = 'mailboxes' | 'stored_bytes' | 'sent_per_hour' | 'sent_per_day' | 'api_requests_per_minute';
type Used = 'mailboxes' | 'stored_bytes' | 'sent_last_hour' | 'sent_last_day';

/** Each quota's row: what it is called here, and the usage it is checked against (none kept for API requests). */
const ROWS: Array<{ quota: Quota; title: string; used: Used | null; bytes?: boolean }> = [
  { quota: 'mailboxes', title: 'Mailboxes', used: 'mailboxes' },
  { quota: 'stored_bytes', title: 'Stored mail', used: 'stored_bytes', bytes: true },
  { quota: 'sent_per_hour', title: 'Sent this hour', used: 'sent_last_hour' },
  { quota: 'sent_per_day', title: 'Sent in 24 hours', used: 'sent_last_day' },
  { quota: 'api_requests_per_minute', title: 'API requests a minute', used: null },
];

function bytesText(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} bytes` : `${value.toFixed(1)} ${units[unit]}`;
}

/** The workspace's usage beside its quotas, which the service's operator sets. */
export function Usage() {
  const report = useQuery(usageQuery());
  const data = report.data;
  const show = (n: number, bytes: boolean | undefined) => (bytes ? bytesText(n) : String(n));
  return (
    <Section title="Usage" intro="What this workspace holds and sends, beside the quotas the service's operator set for it. Past a quota, sends and new mailboxes are refused (429 quota_exceeded) and, past the storage quota, inbound mail is deferred until mail is deleted.">
      <ErrorNote error={report.error} />
      {data && (
        <table className="admin-table">
          <thead>
            <tr>
              <th scope="col">Quota</th>
              <th scope="col">Used</th>
              <th scope="col">Limit</th>
            </tr>
          </thead>
          <tbody>
            {ROWS.map((row) => {
              const limit = data.quotas[row.quota];
              return (
                <tr key={row.quota}>
                  <th scope="row">{row.title}</th>
                  <td>{row.used === null ? '—' : show(data.usage[row.used], row.bytes)}</td>
                  <td>{limit === null ? 'Unlimited' : show(limit, row.bytes)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </Section>
  );
}
