import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import type { SigningKey } from '../domains/domain.service.js';

/** Put a DKIM-Signature (relaxed/relaxed, rsa-sha256) in front of the message. */
export async function signMessage(raw: Buffer, key: SigningKey): Promise<Buffer> {
  const result = await dkimSign(raw, {
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKey }],
    canonicalization: 'relaxed/relaxed',
    algorithm: 'rsa-sha256',
  } as unknown as Parameters<typeof dkimSign>[1]); // mailauth's typing requires top-level fields its code reads from signatureData
  const errors = (result as { errors?: unknown[] }).errors;
  if (errors && errors.length > 0) throw new Error(`DKIM signing failed: ${String(errors[0])}`);
  return Buffer.concat([Buffer.from(result.signatures), raw]);
}
