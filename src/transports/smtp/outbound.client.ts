import { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';
import type { DeliveryRequest, DeliveryResult, RecipientRefusal, SmtpDeliverer } from '../../modules/sending/delivery.types.js';

/** RFC 5321 §4.5.3.2 suggests minutes per command; we keep a busy worker moving with shorter bounds. */
const CONNECT_TIMEOUT_MS = 30_000;
const GREETING_TIMEOUT_MS = 30_000;
const SOCKET_TIMEOUT_MS = 120_000;
const DATA_CHUNK_BYTES = 16 * 1024;

interface SmtpError extends Error {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
  rejectedErrors?: Array<SmtpError & { recipient?: string }>;
}

function refusals(err: SmtpError | undefined): RecipientRefusal[] {
  return (err?.rejectedErrors ?? []).map((e) => ({ recipient: e.recipient ?? '', code: e.responseCode ?? 0, response: e.response ?? e.message }));
}

/**
 * The outbound SMTP client (nodemailer's SMTPConnection): STARTTLS whenever the peer offers it
 * (opportunistic; certificates of MX hosts are not checked, as is common practice without DANE or
 * MTA-STS), and a message stream that asks the caller to record "DATA began" before its first byte,
 * so that a lost connection after that point is known to be ambiguous.
 */
export function createSmtpDeliverer({ heloName }: { heloName: string }): SmtpDeliverer {
  return {
    deliver(request: DeliveryRequest): Promise<DeliveryResult> {
      return new Promise((resolve) => {
        let dataStarted = false;
        // All bytes handed to the connection: from here on the final dot may have reached the peer.
        let dataComplete = false;
        let settled = false;
        const finish = (result: DeliveryResult) => {
          if (settled) return;
          settled = true;
          connection.close();
          resolve(result);
        };
        const connection = new SMTPConnection({
          host: request.route.address ?? request.route.host,
          port: request.route.port,
          secure: request.route.secure === true,
          servername: request.route.host,
          opportunisticTLS: true,
          name: heloName,
          connectionTimeout: CONNECT_TIMEOUT_MS,
          greetingTimeout: GREETING_TIMEOUT_MS,
          socketTimeout: SOCKET_TIMEOUT_MS,
          tls: { rejectUnauthorized: false, servername: request.route.host },
          logger: false,
        });

        const classify = (err: SmtpError): DeliveryResult => {
          const code = typeof err.responseCode === 'number' ? err.responseCode : null;
          const response = err.response ?? err.message;
          if (dataComplete && code === null) return { type: 'ambiguous', response: `connection lost after the end of DATA: ${err.message}` };
          if (code !== null && code >= 500) return { type: 'rejected', code, response, refused: refusals(err) };
          return { type: 'deferred', code, response, refused: refusals(err), beforeMail: err.command === 'CONN' || err.code === 'ECONNECTION' || err.code === 'ETIMEDOUT' || err.code === 'EDNS' };
        };

        connection.once('error', (err: SmtpError) => finish(classify(err)));
        connection.once('end', () => {
          if (!settled) finish(dataComplete ? { type: 'ambiguous', response: 'connection closed after the end of DATA' } : { type: 'deferred', code: null, response: 'connection closed', refused: [], beforeMail: !dataStarted });
        });

        const send = () => {
          // The message goes out in chunks as the socket drains, so a peer that hangs up mid-message is
          // seen before our last byte (and the final dot) was handed over.
          let offset = 0;
          const message = new Readable({
            read() {
              if (!dataStarted) {
                dataStarted = true;
                // Hold the data until the caller's record of "DATA began" is durable.
                request.onDataStart().then(
                  () => this.push(next()),
                  (err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))),
                );
                return;
              }
              this.push(next());
            },
          });
          const next = (): Buffer | null => {
            if (offset >= request.message.length) return null;
            const chunk = request.message.subarray(offset, offset + DATA_CHUNK_BYTES);
            offset += chunk.length;
            return chunk;
          };
          message.once('end', () => {
            dataComplete = true;
          });
          connection.send({ from: request.mailFrom, to: request.recipients }, message, (err, info) => {
            if (err) {
              finish(classify(err));
              return;
            }
            const refusedErrors = refusals({ name: '', message: '', rejectedErrors: (info.rejectedErrors ?? []) });
            finish({ type: 'sent', accepted: info.accepted.map(String), refused: refusedErrors, response: info.response });
          });
        };

        connection.connect(() => {
          if (request.route.auth) {
            connection.login({ user: request.route.auth.user, pass: request.route.auth.pass }, (err) => (err ? finish(classify(err)) : send()));
          } else {
            send();
          }
        });
      });
    },
  };
}
