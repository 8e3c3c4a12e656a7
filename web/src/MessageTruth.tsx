import { useEffect, useId, useState } from 'react';
import { ApiError, client } from './api';
import type { FullMessage } from './types';

type Auth = FullMessage['auth'];
type Verdict = 'passed' | 'failed' | 'not verified';

/** Results that say the sender is not who it claims (RFC 8601's fail, softfail and permerror). */
const FAILING = new Set(['fail', 'softfail', 'permerror']);

/**
 * One word for the three checks (decision 700): DMARC decides when it has a policy to apply; without one, any
 * failing check fails the message and a passing SPF or DKIM alone proves only that some domain sent it.
 */
export function verdictOf(auth: Auth): Verdict {
  if (auth.dmarc === 'pass') return 'passed';
  if (FAILING.has(auth.dmarc) || FAILING.has(auth.spf) || FAILING.has(auth.dkim)) return 'failed';
  return 'not verified';
}

/** rspamd's verdict in one line: "Spam score 7.2 (add header): SYM1, SYM2". */
function spamLine(spam: NonNullable<FullMessage['spam']>): string {
  const symbols = spam.symbols.map((s) => s.name).join(', ');
  return `Spam score ${spam.score} (${spam.action})${symbols ? `: ${symbols}` : ''}`;
}

/** The authentication badge of an inbound message, its details (each check, the spam verdict) behind a disclosure. */
export function AuthBadge({ message }: { message: FullMessage }) {
  const [open, setOpen] = useState(false);
  const detailsId = useId();
  const verdict = verdictOf(message.auth);
  return (
    <div className="truth">
      <button type="button" className={`badge auth-${verdict.replace(' ', '-')}`} aria-expanded={open} aria-controls={detailsId} onClick={() => setOpen((v) => !v)}>
        Authentication: {verdict}
      </button>
      {message.spam && <span className="badge spam-score">Spam score {message.spam.score}</span>}
      <div id={detailsId} hidden={!open} className="truth-details">
        <dl aria-label="Authentication results">
          <dt>SPF</dt>
          <dd>{message.auth.spf}</dd>
          <dt>DKIM</dt>
          <dd>{message.auth.dkim}</dd>
          <dt>DMARC</dt>
          <dd>{message.auth.dmarc}</dd>
          {message.spam && (<><dt>Spam</dt><dd>{spamLine(message.spam)}</dd></>)}
        </dl>
      </div>
    </div>
  );
}

/** The source is shown up to this many characters; the download always carries all of it. */
const SHOWN_SOURCE_CHARS = 1_000_000;

/** A file name from the subject: what a file system accepts, short, and never empty. */
export function emlName(message: FullMessage): string {
  const base = message.subject.replace(/[\\/:*?"<>|\p{Cc}\p{Cf}]+/gu, ' ').replace(/\s+/g, ' ').trim().slice(0, 80).trim();
  return `${base || message.message_id}.eml`;
}

/** The unfolded header fields of a raw source: the lines before the first empty line. */
function headerFields(raw: string): Array<{ name: string; value: string }> {
  const end = raw.search(/\r?\n\r?\n/);
  const block = (end === -1 ? raw : raw.slice(0, end)).replace(/\r?\n[ \t]+/g, ' ');
  return block.split(/\r?\n/).flatMap((line) => {
    const colon = line.indexOf(':');
    return colon > 0 ? [{ name: line.slice(0, colon), value: line.slice(colon + 1).trim() }] : [];
  });
}

interface RawSource {
  /** The source decoded for reading, a blob: URL of its bytes for the download, and their size. */
  text: string;
  url: string;
  size: number;
}

/** The raw source, read once; its blob: URL lives as long as the view. */
function useRawSource(messageId: string): { source: RawSource | null; error: string | null } {
  const [state, setState] = useState<{ source: RawSource | null; error: string | null }>({ source: null, error: null });
  useEffect(() => {
    let live = true;
    let url: string | null = null;
    const load = async () => {
      const { data } = await client.GET('/app/api/messages/{message_id}/raw', { params: { path: { message_id: messageId } }, headers: { accept: null }, parseAs: 'blob' });
      const blob = new Blob([data as Blob], { type: 'message/rfc822' });
      const text = await blob.text();
      if (!live) return;
      url = URL.createObjectURL(blob);
      setState({ source: { text, url, size: blob.size }, error: null });
    };
    load().catch((err: unknown) => live && setState({ source: null, error: err instanceof ApiError ? err.detail : 'the source could not be loaded' }));
    return () => {
      live = false;
      if (url !== null) URL.revokeObjectURL(url);
    };
  }, [messageId]);
  return state;
}

/** "Show original": the header fields and the raw source as stored, and the source as an .eml download. */
export function Original({ message }: { message: FullMessage }) {
  const { source, error } = useRawSource(message.message_id);
  if (error) return <p className="error" role="alert">{error}</p>;
  if (source === null) return <p className="loading" role="status">Loading the original…</p>;
  const { text, url, size } = source;
  const fields = headerFields(text);
  return (
    <section className="original" aria-labelledby="original-title">
      <h2 id="original-title">Original message</h2>
      <p><a href={url} download={emlName(message)}>Download original (.eml)</a> <span className="muted">{size} bytes</span></p>
      <table className="headers">
        <caption>Header fields</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Value</th></tr></thead>
        <tbody>
          {fields.map((f, i) => <tr key={i}><th scope="row">{f.name}</th><td>{f.value}</td></tr>)}
        </tbody>
      </table>
      <h3>Source</h3>
      {text.length > SHOWN_SOURCE_CHARS && <p className="muted">The first {SHOWN_SOURCE_CHARS.toLocaleString()} characters; the download has all of it.</p>}
      <pre className="source" tabIndex={0} aria-label="Raw source">{text.slice(0, SHOWN_SOURCE_CHARS)}</pre>
    </section>
  );
}
