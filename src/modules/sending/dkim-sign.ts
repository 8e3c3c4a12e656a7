import { createPrivateKey, type KeyObject } from 'node:crypto';
import DKIM from 'nodemailer/lib/dkim/index.js';
import type { SigningKey } from '../domains/domain.service.js';

/** Parsed keys by PEM: parsing a 2048-bit RSA key costs more than the signature itself (bench/HISTORY.md, decision 207). */
const parsedKeys = new Map<string, KeyObject>();
const MAX_PARSED_KEYS = 1000;

function keyObject(pem: string): KeyObject {
  let key = parsedKeys.get(pem);
  if (!key) {
    key = createPrivateKey(pem);
    if (parsedKeys.size >= MAX_PARSED_KEYS) parsedKeys.delete(parsedKeys.keys().next().value!);
    parsedKeys.set(pem, key);
  }
  return key;
}

/**
 * The fields signed when present: nodemailer's default list (RFC 6376 section 5.4's) plus List-Unsubscribe-Post,
 * which RFC 8058 section 4 requires in the signature with List-Unsubscribe and which that list lacks.
 */
export const SIGNED_HEADER_FIELDS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:Content-ID:' +
  'Content-Description:Resent-Date:Resent-From:Resent-Sender:Resent-To:Resent-Cc:Resent-Message-ID:In-Reply-To:References:' +
  'List-Id:List-Help:List-Unsubscribe:List-Subscribe:List-Post:List-Owner:List-Archive:OTP-Token:List-Unsubscribe-Post';

const CR = 0x0d;
const LF = 0x0a;
const CRLF = Buffer.from('\r\n');

/**
 * The message with every line break as CRLF, as the SMTP client sends it (nodemailer's DataStream turns a bare CR
 * or LF into CRLF): signed as stored, such a message would fail every verifier with a body hash mismatch. The
 * composer writes CRLF only; this also covers a message stored before it did. The breaks are found with indexOf
 * (native), each kind's next one kept until passed, so a 35 MB message costs one pass and no byte loop.
 */
export function crlfLines(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let from = 0;
  let cr = raw.indexOf(CR);
  let lf = raw.indexOf(LF);
  while (cr !== -1 || lf !== -1) {
    const at = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
    // A CRLF is a line break as it should be; a CR or LF alone is replaced by one.
    const next = at === cr && lf === at + 1 ? at + 2 : at + 1;
    if (next === at + 1) {
      parts.push(raw.subarray(from, at), CRLF);
      from = next;
    }
    if (cr !== -1 && cr < next) cr = raw.indexOf(CR, next);
    if (lf !== -1 && lf < next) lf = raw.indexOf(LF, next);
  }
  if (parts.length === 0) return raw;
  parts.push(raw.subarray(from));
  return Buffer.concat(parts);
}

/**
 * Put a DKIM-Signature (relaxed/relaxed, rsa-sha256) in front of the message, with nodemailer's signer:
 * unlike mailauth's, it takes a parsed KeyObject, so a domain's key is parsed once per process. What it signs is
 * the bytes the SMTP client sends: CRLF lines only (the client's dot-stuffing is undone by the receiver).
 */
export async function signMessage(stored: Buffer, key: SigningKey): Promise<Buffer> {
  const raw = crlfLines(stored);
  const signer = new DKIM({
    domainName: key.domain,
    keySelector: key.selector,
    // Handed to crypto's Sign.sign as it is: no PEM parsing per message.
    privateKey: keyObject(key.privateKey),
    headerFieldNames: SIGNED_HEADER_FIELDS,
  });
  const chunks: Buffer[] = [];
  for await (const chunk of signer.sign(raw)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
