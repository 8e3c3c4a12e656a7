#!/usr/bin/env node
// The `mailroom` command: runs the compiled CLI (built by `npm ci` through the `prepare` script).
import('../dist/cli/index.js').then((m) => m.main(process.argv)).catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli')) {
    console.error('mailroom: the compiled CLI is missing; run `npm run build` (npm ci does it for you).');
  } else {
    console.error(err);
  }
  process.exit(1);
});
