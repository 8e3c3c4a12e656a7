import { Ajv, type AnySchema, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

// ajv-formats is CommonJS with a default export; under NodeNext its namespace is what we import.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const BASE: Options = { allErrors: false, strict: false, useDefaults: true, removeAdditional: false };

/**
 * Two validators: bodies are JSON, so their types are taken exactly as sent (no coercion: `"5"` is
 * not a number); query strings, path parameters and headers are text, so they are coerced
 * (`limit=5` → 5, `read=false` → false). Unknown fields are refused everywhere the schema says so.
 */
export function createValidatorCompiler(sharedSchemas: object[]): FastifySchemaCompiler<unknown> {
  const body = addFormats(new Ajv({ ...BASE, coerceTypes: false }));
  const text = addFormats(new Ajv({ ...BASE, coerceTypes: 'array' }));
  for (const schema of sharedSchemas) {
    body.addSchema(schema);
    text.addSchema(schema);
  }
  return ({ schema, httpPart }) => {
    const validate = (httpPart === 'body' ? body : text).compile(schema as AnySchema);
    if (httpPart === 'body' && (schema as Record<string, unknown>)[OPTIONAL_BODY] === true) {
      // An absent body is allowed here (its fields may come as query parameters instead).
      // Fastify hands an absent body to the validator as null.
      const optional = (data: unknown): boolean => data === undefined || data === null || (validate(data) as boolean);
      Object.defineProperty(optional, 'errors', { get: () => validate.errors });
      return optional;
    }
    return validate;
  };
}

const OPTIONAL_BODY = 'x-optional-body';

/** Mark a body schema as optional: a request without a body skips it. */
export function optionalBody<T extends object>(schema: T): T {
  return { ...schema, [OPTIONAL_BODY]: true };
}
