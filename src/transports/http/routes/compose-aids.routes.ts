import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { MAX_SIGNATURE_LENGTH, type ComposeAids } from '../../../modules/mailboxes/compose-aids.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { Email, answer, errors } from '../schemas.js';

const NoQuery = Type.Object({}, { additionalProperties: false });
const AddressParams = Type.Object({ address: Email }, { additionalProperties: false });
const Signature = Type.Object(
  { mailbox: Type.String(), html: Type.String({ description: 'the signature as HTML; "" when none' }), updated_at: Type.String({ format: 'date-time' }) },
  { title: 'Signature' },
);
const SignatureList = Type.Object({ signatures: Type.Array(Signature) }, { title: 'SignatureList' });
const SignatureBody = Type.Object({ html: Type.String({ maxLength: MAX_SIGNATURE_LENGTH }) }, { additionalProperties: false, title: 'SignatureChange' });
const Contact = Type.Object({ address: Type.String(), name: Type.Union([Type.String(), Type.Null()]) }, { title: 'Contact' });
const ContactList = Type.Object({ contacts: Type.Array(Contact) }, { title: 'ContactList' });
const ContactQuery = Type.Object(
  {
    q: Type.String({ minLength: 1, maxLength: 254, description: 'the start of an address, or of a word of a name' }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 })),
  },
  { additionalProperties: false },
);

/** The composer's aids (session surface): mailbox signatures and address completion. */
export function composeAidRoutes({ aids, tenant }: { aids: ComposeAids; tenant: (request: FastifyRequest) => TenantContext }): FastifyPluginAsyncTypebox {
  const security = [{ session: [] }];
  const tags = ['composing'];
  return async (app) => {
    app.get(
      '/signatures',
      {
        schema: {
          operationId: 'appListSignatures',
          summary: "The signatures of the workspace's mailboxes",
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('Each mailbox that has a signature, by address', SignatureList), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => ({ signatures: await aids.signatures(tenant(request)) }),
    );

    app.put(
      '/signatures/:address',
      {
        schema: {
          operationId: 'appSetSignature',
          summary: "Set a mailbox's signature (\"\" removes it)",
          tags,
          security,
          params: AddressParams,
          querystring: NoQuery,
          body: SignatureBody,
          response: { 200: answer('The signature as stored', Signature), ...errors(400, 401, 403, 404, 413, 415, 429) },
        },
      },
      async (request) => aids.setSignature(tenant(request), request.params.address, request.body.html),
    );

    app.get(
      '/contacts',
      {
        schema: {
          operationId: 'appListContacts',
          summary: 'Addresses the workspace recently mailed with, for completion',
          tags,
          security,
          querystring: ContactQuery,
          response: { 200: answer('Matching addresses, most recent first', ContactList), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => ({ contacts: await aids.contacts(tenant(request), request.query.q, request.query.limit ?? 8) }),
    );
  };
}
