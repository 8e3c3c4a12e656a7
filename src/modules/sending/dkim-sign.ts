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
 * Put a DKIM-Signature (relaxed/relaxed, rsa-sha256) in front of the message, with nodemailer's signer:
 * unlike mailauth's, it takes a parsed KeyObject, so a domain's key is parsed once per process.
 */
export async function signMessage(raw: Buffer, key: SigningKey): Promise<Buffer> {
  const signer = new DKIM({
    domainName: key.domain,
    keySelector: key.selector,
    // Handed to crypto's Sign.sign as it is: no PEM parsing per message.
    privateKey: keyObject(key.privateKey),
  });
  const chunks: Buffer[] = [];
  for await (const chunk of signer.sign(raw)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
