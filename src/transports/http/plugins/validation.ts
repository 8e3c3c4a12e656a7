import { Ajv, type AnySchema, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { Type, type Static, type TArray, type TSchema, type TUnsafe } from 'typebox';

// ajv-formats is CommonJS with a default export; under NodeNext its namespace is what we import.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const BASE: Options = { allErrors: false, strict: false, useDefaults: true, removeAdditional: false };

/** Whole numbers as query text: decimal digits, no sign but `-`, no leading zeros, spaces, `0x`/`0b`, exponent or fraction. */
const INTEGER_TEXT = /^(?:0|-?[1-9]\d*)$/;
/** Numbers as query text: an integer as above with an optional decimal fraction. */
const NUMBER_TEXT = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;

/** The value a text field stands for under its schema type; text that is no such value stays text and fails validation. */
function fromText(type: unknown, text: string): unknown {
  if (type === 'integer') return INTEGER_TEXT.test(text) ? Number(text) : text;
  if (type === 'number') return NUMBER_TEXT.test(text) ? Number(text) : text;
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  return text;
}

/**
 * Query strings, path parameters and headers are text. Ajv's own coercion reads text as JavaScript does
 * (`0x10` → 16, ` 5` → 5, `1e3` → 1000, `Infinity`), so each field is converted here, strictly, by the
 * type its schema declares, before validation; a repeated field stays an array and fails a scalar schema.
 */
function coerceText(schema: AnySchema, data: unknown): void {
  const properties = typeof schema === 'object' ? (schema.properties as Record<string, { type?: unknown } | undefined> | undefined) : undefined;
  if (!properties || typeof data !== 'object' || data === null) return;
  const fields = data as Record<string, unknown>;
  for (const [name, value] of Object.entries(fields)) {
    if (typeof value === 'string') fields[name] = fromText(properties[name]?.type, value);
  }
}

/**
 * Two validators, neither of which coerces: bodies are JSON, so their types are taken exactly as sent
 * (`"5"` is not a number); text (query strings, path parameters, headers) is converted by `coerceText`
 * first (`limit=5` → 5, `read=false` → false). Unknown fields are refused everywhere the schema says so.
 */
export function createValidatorCompiler(sharedSchemas: object[]): FastifySchemaCompiler<unknown> {
  const ajv = bodyAjv();
  for (const schema of sharedSchemas) ajv.addSchema(schema);
  return ({ schema, httpPart }) => {
    const validate = ajv.compile(withItemsApart(schema) as AnySchema);
    if (httpPart !== 'body') {
      const validateText = (data: unknown): boolean => {
        coerceText(schema as AnySchema, data);
        return validate(data) as boolean;
      };
      Object.defineProperty(validateText, 'errors', { get: () => validate.errors });
      return validateText;
    }
    // Read by the route itself, part by part, as it arrives (file uploads); the schema only documents it.
    if ((schema as Record<string, unknown>)[STREAMED_BODY] === true) return () => true;
    if ((schema as Record<string, unknown>)[OPTIONAL_BODY] === true) {
      // An absent body is allowed here (its fields may come as query parameters instead).
      // Fastify hands an absent body to the validator as null.
      const optional = (data: unknown): boolean => data === undefined || data === null || (validate(data) as boolean);
      Object.defineProperty(optional, 'errors', { get: () => validate.errors });
      return optional;
    }
    return validate;
  };
}

/** The mark of an optional body schema (read again by openapi.ts, which documents the body as optional). */
export const OPTIONAL_BODY = 'x-optional-body';

/**
 * Mark a body schema as optional: a request without a body skips it. The route's `request.body` is then
 * typed as the schema's value, `undefined` (no body) or `null` (a JSON `null`), as the validator lets through.
 */
export function optionalBody<T extends TSchema>(schema: T): TUnsafe<Static<T> | null | undefined> {
  return Type.Unsafe<Static<T> | null | undefined>({ ...schema, [OPTIONAL_BODY]: true });
}

/** The Ajv of JSON bodies: no coercion, formats checked. */
function bodyAjv(): Ajv {
  return addFormats(new Ajv({ ...BASE, coerceTypes: false }));
}

/** The mark of an array whose items the route validates itself, one by one (read by the compiler above). */
export const ITEMS_APART = 'x-items-validated-apart';

/**
 * An array whose items the request's validator does not look into: the route validates each on its own
 * (`compileBodyValidator`), so one bad item of a batch fails only itself. The array's own rules (its
 * length) still apply, and /openapi.json documents the items' schema; the route sees them as `unknown`.
 */
export function itemsApart(array: TArray): TUnsafe<unknown[]> {
  return Type.Unsafe<unknown[]>({ ...array, [ITEMS_APART]: true });
}

/**
 * The schema with every `itemsApart` array's items taken as they come; the very same object when it has none
 * (Ajv knows schemas by identity, and a copy of one with an `$id` would clash with the original).
 */
function withItemsApart(schema: unknown): unknown {
  if (Array.isArray(schema)) {
    const items = schema.map(withItemsApart);
    return items.some((item, i) => item !== schema[i]) ? items : schema;
  }
  if (typeof schema !== 'object' || schema === null) return schema;
  const node = schema as Record<string, unknown>;
  if (node[ITEMS_APART] === true) return { ...node, items: {} };
  const entries = Object.entries(node).map(([key, value]) => [key, withItemsApart(value)] as const);
  return entries.some(([key, value]) => value !== node[key]) ? Object.fromEntries(entries) : schema;
}

/** A body validator with the request validator's settings, for the items a route validates itself (`itemsApart`). */
export function compileBodyValidator<T extends TSchema>(schema: T): ValidateFunction<Static<T>> {
  return bodyAjv().compile<Static<T>>(schema as AnySchema);
}

/** The mark of a body the route reads as a stream (plugins/uploads.ts); openapi.ts removes it from the document. */
export const STREAMED_BODY = 'x-streamed-body';

/**
 * A multipart/form-data body: documented by `schema` (files as `format: binary` strings), read and checked by the
 * route as it streams in, so nothing is validated (or buffered) before the handler runs. `request.body` is unset.
 */
export function streamedBody<T extends TSchema>(schema: T): TUnsafe<undefined> {
  return Type.Unsafe<undefined>({ ...schema, [STREAMED_BODY]: true });
}
