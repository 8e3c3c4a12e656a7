/**
 * Settings every service a test starts gets (in process or as a child), under the test's own. Tests
 * deliver to SMTP peers on loopback (MX → 127.0.0.1), which the outbound address rules refuse
 * (contract §5), so loopback is exempt, as the contract says tests do. A test of the rules themselves
 * sets MAILROOM_DELIVERY_ALLOW_CIDRS to '' (unset) or to other networks.
 */
export const TEST_SERVICE_ENV: Readonly<Record<string, string>> = { MAILROOM_DELIVERY_ALLOW_CIDRS: '127.0.0.0/8' };
