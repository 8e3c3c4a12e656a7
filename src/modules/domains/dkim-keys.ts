import { generateKeyPair } from 'node:crypto';

/** RFC 8301: DKIM signers use RSA keys of at least 1024 bits; 2048 is today's norm and fits one TXT record. */
export const DKIM_KEY_BITS = 2048;

export interface DkimKeyPair {
  /** PKCS#8 PEM */
  privateKey: string;
  /** Base64 SPKI DER, the value of the record's `p=` tag */
  publicKey: string;
}

export function generateDkimKeyPair(): Promise<DkimKeyPair> {
  return new Promise((resolve, reject) => {
    generateKeyPair(
      'rsa',
      { modulusLength: DKIM_KEY_BITS, publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } },
      (err, publicKey, privateKey) => (err ? reject(err) : resolve({ privateKey, publicKey: publicKey.toString('base64') })),
    );
  });
}

/** The TXT record (RFC 6376 section 3.6.1) publishing a public key. */
export function dkimRecord(selector: string, domain: string, publicKey: string): { record_name: string; record_type: 'TXT'; record_value: string } {
  return { record_name: `${selector}._domainkey.${domain}`, record_type: 'TXT', record_value: `v=DKIM1; k=rsa; p=${publicKey}` };
}
