import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';

/**
 * The TLS certificate of the service's listeners, replaced while they run.
 *
 * A `CertificateSource` holds the current key and certificate chain (PEM) and their `tls.SecureContext`; whatever
 * offers a new pair (a watch on files, the ACME module) goes through `offer`, which keeps the old pair when the new
 * one does not parse or its key does not match its certificate. Each listener takes the source and keeps itself
 * current from it; a connection keeps the certificate it started with, a new one gets the newest.
 *
 * How a listener uses a source:
 * - smtp-server (inbound SMTP, submission, STARTTLS or implicit TLS): create it with `source.pem()` as `key`/`cert`,
 *   then `source.follow((pem) => server.updateSecureContext(pem))` (smtp-server rebuilds its default context, which
 *   every later STARTTLS or implicit-TLS handshake takes).
 * - `tls.createServer` (IMAPS): `tls.createServer({ ...source.pem(), … })`, then
 *   `source.follow((pem) => server.setSecureContext(pem))`; or pass `SNICallback: source.SNICallback`.
 * - a STARTTLS upgrade done by hand (IMAP STARTTLS): `new tls.TLSSocket(socket, { isServer: true,
 *   secureContext: source.secureContext() })` at the moment of the upgrade.
 * `follow` returns the function that stops following; call it when the listener closes.
 *
 * A source may have no certificate yet (ACME before its first order: `current()` is null). A STARTTLS listener then
 * withholds STARTTLS (inbound SMTP sets `session.disabledCommands` per session); an implicit-TLS listener (IMAPS,
 * port 465) fails the handshake (`SNICallback` answers an error) rather than present smtp-server's built-in key.
 *
 * Which source a listener gets (its own files, the general files, or ACME) is decided where the service is
 * composed: main.ts `createListenerCertificates(config, acme, logger).forListener('smtp' | 'imap' | 'submission')`,
 * one instance per process in `startService`; this file knows no configuration.
 */

/** A private key and the certificate chain that goes with it, PEM text. */
export interface CertificatePem {
  key: string;
  cert: string;
}

/** A pair that parsed and matched, with what is worth logging of its certificate. */
export interface LoadedCertificate {
  pem: CertificatePem;
  context: SecureContext;
  subject: string;
  issuer: string;
  /** DNS names and addresses (`DNS:a, DNS:b`), or '' when the certificate has none. */
  subjectAltName: string;
  notBefore: Date;
  notAfter: Date;
  serialNumber: string;
  fingerprint256: string;
  /** Where it came from, for logs: a file path, `acme`, … */
  origin: string;
}

export interface CertificateLog {
  info(details: object, message: string): void;
  error(details: object, message: string): void;
}

export class CertificateError extends Error {
  override name = 'CertificateError';
}

/** Parse a key and certificate chain; throws CertificateError when either does not parse or they do not match. */
export function parseCertificatePair(pem: CertificatePem, origin: string): LoadedCertificate {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(pem.cert);
  } catch (err) {
    throw new CertificateError(`the certificate does not parse: ${(err as Error).message}`);
  }
  let matches: boolean;
  try {
    matches = x509.checkPrivateKey(createPrivateKey(pem.key));
  } catch (err) {
    throw new CertificateError(`the private key does not parse: ${(err as Error).message}`);
  }
  if (!matches) throw new CertificateError('the private key does not belong to the certificate');
  let context: SecureContext;
  try {
    context = createSecureContext({ key: pem.key, cert: pem.cert });
  } catch (err) {
    throw new CertificateError(`the key and certificate make no TLS context: ${(err as Error).message}`);
  }
  return {
    pem,
    context,
    subject: x509.subject.replace(/\n/g, ', '),
    issuer: x509.issuer.replace(/\n/g, ', '),
    subjectAltName: x509.subjectAltName ?? '',
    notBefore: new Date(x509.validFrom),
    notAfter: new Date(x509.validTo),
    serialNumber: x509.serialNumber,
    fingerprint256: x509.fingerprint256,
    origin,
  };
}

export interface CertificateSource {
  /** The current pair, or null before any was loaded. */
  current(): LoadedCertificate | null;
  /** The current pair's PEM (for a server's constructor); null before any was loaded. */
  pem(): CertificatePem | null;
  /** The current context, for a STARTTLS upgrade done by hand. */
  secureContext(): SecureContext | null;
  /** `tls.createServer`'s SNICallback: every name gets the current context. */
  SNICallback(servername: string, callback: (err: Error | null, context?: SecureContext) => void): void;
  /** Call `apply` with every later pair (not the current one: a server is created with that); returns the stop. */
  follow(apply: (pem: CertificatePem) => void): () => void;
  /** Take a new pair unless it does not parse or match (then the old one stays and the error is logged); true if taken. */
  offer(pem: CertificatePem, origin: string): boolean;
  /** Stop watching (file sources); the last pair stays usable. */
  close(): void;
}

const describe = (c: LoadedCertificate) => ({
  origin: c.origin,
  subject: c.subject,
  subject_alt_name: c.subjectAltName,
  issuer: c.issuer,
  not_after: c.notAfter.toISOString(),
  serial: c.serialNumber,
});

/** A source that changes only when offered a pair (the ACME module offers it the certificates it obtains). */
export function createCertificateHolder(log: CertificateLog): CertificateSource {
  let loaded: LoadedCertificate | null = null;
  const followers = new Set<(pem: CertificatePem) => void>();
  return {
    current: () => loaded,
    pem: () => loaded?.pem ?? null,
    secureContext: () => loaded?.context ?? null,
    SNICallback(_servername, callback) {
      if (loaded) callback(null, loaded.context);
      else callback(new CertificateError('no certificate loaded yet'));
    },
    follow(apply) {
      followers.add(apply);
      return () => followers.delete(apply);
    },
    offer(pem, origin) {
      let next: LoadedCertificate;
      try {
        next = parseCertificatePair(pem, origin);
      } catch (err) {
        log.error({ origin, err: (err as Error).message }, 'TLS certificate not loaded; the previous one stays in use');
        return false;
      }
      loaded = next;
      log.info(describe(next), 'TLS certificate loaded');
      for (const apply of followers) {
        try {
          apply(next.pem);
        } catch (err) {
          log.error({ origin, err: (err as Error).message }, 'a listener did not take the new TLS certificate');
        }
      }
      return true;
    },
    close() {
      followers.clear();
    },
  };
}

/** How often certificate files are looked at again whatever the file watch says (certbot and Kubernetes swap links). */
export const DEFAULT_CERTIFICATE_CHECK_MS = 30_000;
/** Wait after a change is seen before reading: key and certificate are often written one after the other. */
const SETTLE_MS = 250;

export interface CertificateFiles {
  keyFile: string;
  certFile: string;
}

/**
 * A source over a key file and a certificate file: read now (throws CertificateError when they do not load, so a
 * start with a bad pair stops with a clear message), then read again on every change the directory watch reports
 * and every `checkMs` whatever it reports; a new content is offered, a content that failed once is not offered
 * again until it changes (one error line per bad version, not one per check).
 */
export function createFileCertificates(files: CertificateFiles, log: CertificateLog, checkMs = DEFAULT_CERTIFICATE_CHECK_MS): CertificateSource {
  const holder = createCertificateHolder(log);
  const origin = `${files.certFile} + ${files.keyFile}`;
  const first = { key: readFileSync(files.keyFile, 'utf8'), cert: readFileSync(files.certFile, 'utf8') };
  parseCertificatePair(first, origin); // throws with the reason; offer() would only log it
  holder.offer(first, origin);
  let lastSeen = digest(first);
  let closed = false;
  let settle: NodeJS.Timeout | undefined;

  async function check(): Promise<void> {
    if (closed) return;
    let pem: CertificatePem;
    try {
      pem = { key: await readFile(files.keyFile, 'utf8'), cert: await readFile(files.certFile, 'utf8') };
    } catch (err) {
      const text = `unreadable: ${(err as Error).message}`;
      if (lastSeen !== text) log.error({ origin, err: (err as Error).message }, 'TLS certificate files unreadable; the previous certificate stays in use');
      lastSeen = text;
      return;
    }
    const seen = digest(pem);
    if (seen === lastSeen || closed) return;
    lastSeen = seen;
    holder.offer(pem, origin);
  }
  const soon = () => {
    clearTimeout(settle);
    settle = setTimeout(() => void check(), SETTLE_MS);
    settle.unref();
  };
  // The directories, not the files: a rename or a symlink swap replaces the file a watch on it would follow.
  const watchers: FSWatcher[] = [];
  for (const dir of new Set([dirname(resolve(files.keyFile)), dirname(resolve(files.certFile))])) {
    try {
      const w = watch(dir, { persistent: false }, soon);
      w.on('error', () => w.close()); // the periodic check still runs
      watchers.push(w);
    } catch {
      // No watch on this file system: the periodic check alone.
    }
  }
  const timer = setInterval(() => void check(), checkMs);
  timer.unref();
  return {
    ...holder,
    close() {
      closed = true;
      clearInterval(timer);
      clearTimeout(settle);
      for (const w of watchers) w.close();
      holder.close();
    },
  };
}

function digest(pem: CertificatePem): string {
  return createHash('sha256').update(pem.key).update('\0').update(pem.cert).digest('hex');
}
