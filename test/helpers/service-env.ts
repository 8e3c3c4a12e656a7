/**
 * Settings every service a test starts gets (in process or as a child), under the test's own. Tests
 * deliver to SMTP peers on loopback (MX → 127.0.0.1), which the outbound address rules refuse
 * (lib/address-rules.ts), so loopback is exempt in tests. A test of the rules themselves
 * sets MAILROOM_DELIVERY_ALLOW_CIDRS to '' (unset) or to other networks. A search's first answer includes
 * starting its reader thread, which from source (tsx) can take seconds on a loaded machine: tests of other things
 * get a search budget that never ends their search (test/search-fairness.test.ts sets its own). The web app's sends
 * leave at once, not after the undo window (a test clock that never moves would hold them for ever): the tests of
 * undo send set their own window.
 */
export const TEST_SERVICE_ENV: Readonly<Record<string, string>> = {
  MAILROOM_DELIVERY_ALLOW_CIDRS: '127.0.0.0/8',
  MAILROOM_SEARCH_TIMEOUT_MS: '60000',
  MAILROOM_UNDO_SEND_SECONDS: '0',
};
