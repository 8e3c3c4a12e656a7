/** VERP (variable envelope return path): every outbound message has its own return address. */

/** `bounces+msg_…@bounce.domain`: bounces and complaints come back to this address and name their message. */
export function verpAddress(messageId: string, bounceDomain: string): string {
  return `bounces+${messageId}@${bounceDomain}`;
}

/** The message id in a VERP address, when it is one of ours. */
export function parseVerp(address: string, bounceDomain: string): string | null {
  const match = /^bounces\+(msg_[0-9a-z]{26})@(.+)$/.exec(address.toLowerCase());
  return match && match[2] === bounceDomain ? match[1]! : null;
}
