import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { LabelService } from '../../../modules/messages/label.service.js';
import type { TenantContext } from '../../../modules/tenancy/tenancy.types.js';
import { Label, answer, errors, operationId } from '../schemas.js';

const NoQuery = Type.Object({}, { additionalProperties: false });
const LabelParams = Type.Object({ name: Label }, { additionalProperties: false });
const Colour = Type.String({ minLength: 7, maxLength: 7, pattern: '^#[0-9a-fA-F]{6}$', description: '#rrggbb' });
const LabelInput = Type.Object({ colour: Colour }, { additionalProperties: false, title: 'LabelInput' });
const LabelSchema = Type.Object(
  {
    name: Type.String(),
    colour: Type.Union([Type.String(), Type.Null()], { description: '#rrggbb; null: never given one' }),
    defined: Type.Boolean({ description: 'the workspace gave it a colour; false: only carried by messages' }),
    messages: Type.Integer({ description: 'messages carrying it, counted up to count_cap' }),
    unread: Type.Integer({ description: 'unread ones outside trash and spam' }),
  },
  { title: 'Label' },
);
const LabelList = Type.Object(
  {
    labels: Type.Array(LabelSchema),
    count_cap: Type.Integer({ description: 'messages counts stop here' }),
    unread_capped: Type.Boolean({ description: 'true: unread counts are of the workspace\'s newest 10,000 unread messages only' }),
  },
  { title: 'LabelList' },
);
const LabelColour = Type.Object({ name: Type.String(), colour: Type.String() }, { title: 'LabelColour' });
const LabelRemoved = Type.Object(
  { name: Type.String(), removed: Type.Integer(), remaining: Type.Boolean({ description: 'more messages carry it: call again' }) },
  { title: 'LabelRemoved' },
);

/** The workspace's labels on both surfaces: list with counts, set a colour, delete (off messages, bounded). */
export function labelRoutes({ labels, tenant, surface }: { labels: LabelService; tenant: (request: FastifyRequest) => TenantContext; surface: 'api-key' | 'session' }): FastifyPluginAsyncTypebox {
  const tags = [surface === 'api-key' ? 'labels (API key)' : 'labels (session)'];
  const security = surface === 'api-key' ? [{ apiKey: [] }] : [{ session: [] }];
  const op = (name: string) => operationId(surface, name);
  return async (app) => {
    app.get(
      '/labels',
      {
        schema: {
          operationId: op('listLabels'),
          summary: 'The labels in use or defined, with their colours and counts',
          tags,
          security,
          querystring: NoQuery,
          response: { 200: answer('The labels, by name', LabelList), ...errors(400, 401, 403, 429) },
        },
      },
      async (request) => labels.list(tenant(request)),
    );

    app.put(
      '/labels/:name',
      {
        schema: {
          operationId: op('setLabelColour'),
          summary: "Define a label, or change its colour",
          tags,
          security,
          params: LabelParams,
          querystring: NoQuery,
          body: LabelInput,
          response: { 200: answer('The label', LabelColour), ...errors(400, 401, 403, 413, 415, 429) },
        },
      },
      async (request) => labels.setColour(tenant(request), request.params.name, request.body.colour),
    );

    app.delete(
      '/labels/:name',
      {
        schema: {
          operationId: op('deleteLabel'),
          summary: 'Delete a label: its colour, and the label on up to 1000 messages a call',
          tags,
          security,
          params: LabelParams,
          querystring: NoQuery,
          response: { 200: answer('What was removed', LabelRemoved), ...errors(400, 401, 403, 404, 429) },
        },
      },
      async (request) => labels.remove(tenant(request), request.params.name),
    );
  };
}
