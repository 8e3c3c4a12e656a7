import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';

/** Read SMTP replies from a socket until one whose last line is `NNN ` (not `NNN-`). */
function readReply(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const lines = text.split('\r\n').filter((l) => l.length > 0);
      const last = lines.at(-1);
      if (text.endsWith('\r\n') && last && /^\d{3} /.test(last)) {
        socket.off('data', onData);
        socket.off('error', reject);
        resolve(text);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

/** What a client saw of the server's certificate after STARTTLS; null when the server offered no STARTTLS. */
export interface SeenCertificate {
  subjectCn: string;
  issuerCn: string;
  serialNumber: string;
  fingerprint256: string;
  validTo: string;
  /** `DNS:a, DNS:b` */
  subjectAltName: string;
}

const cn = (part: PeerCertificate['subject']) => String((part as unknown as Record<string, string | undefined>).CN ?? '');

/**
 * A real SMTP client on loopback: greeting, EHLO, STARTTLS, and the TLS handshake (no verification: what is
 * looked at is which certificate the server presents). Null when the EHLO answer offers no STARTTLS.
 */
export async function startTlsCertificate(port: number, servername = 'localhost'): Promise<SeenCertificate | null> {
  const socket = netConnect(port, '127.0.0.1');
  try {
    await readReply(socket);
    socket.write('EHLO client.test\r\n');
    const ehlo = await readReply(socket);
    if (!/^250[ -]STARTTLS$/m.test(ehlo.replace(/\r/g, ''))) return null;
    socket.write('STARTTLS\r\n');
    const ready = await readReply(socket);
    if (!ready.startsWith('220')) throw new Error(`STARTTLS refused: ${ready}`);
    const secure = tlsConnect({ socket, servername, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', () => resolve());
      secure.once('error', reject);
    });
    const cert = secure.getPeerCertificate();
    secure.destroy();
    return { subjectCn: cn(cert.subject), issuerCn: cn(cert.issuer), serialNumber: cert.serialNumber, fingerprint256: cert.fingerprint256, validTo: cert.valid_to, subjectAltName: cert.subjectaltname ?? '' };
  } finally {
    socket.destroy();
  }
}
