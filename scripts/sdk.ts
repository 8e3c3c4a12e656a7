// npm run sdk: regenerate src/sdk/openapi.d.ts from the document the app serves (no server is started).
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { SDK_TYPES_FILE, buildOpenApiDocument, renderSdkTypes } from './openapi-document.js';

const text = await renderSdkTypes(await buildOpenApiDocument());
writeFileSync(SDK_TYPES_FILE, text);
console.log(`wrote ${relative(process.cwd(), SDK_TYPES_FILE)} (${text.length} characters)`);
