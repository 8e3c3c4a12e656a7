import selfsigned from 'selfsigned';

/** A key and the certificate for it, in PEM. */
export interface TestCertificate {
  key: string;
  cert: string;
}

/** A certificate authority of the test's own: what a service given `cert` to trust (and nothing else) will verify. */
export interface TestCa {
  cert: string;
  /** A server certificate for `names` (its subjectAltName), signed by this CA. */
  issue(names: string[]): Promise<TestCertificate>;
}

const DAY_MS = 86_400_000;

export async function createTestCa(): Promise<TestCa> {
  const ca = await selfsigned.generate([{ name: 'commonName', value: 'Mailroom Test CA' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return {
    cert: ca.cert,
    async issue(names) {
      const pems = await selfsigned.generate([{ name: 'commonName', value: names[0] ?? 'localhost' }], {
        keySize: 2048,
        algorithm: 'sha256',
        notAfterDate: new Date(Date.now() + DAY_MS),
        ca: { key: ca.private, cert: ca.cert },
        extensions: [
          { name: 'basicConstraints', cA: false },
          { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
          { name: 'extKeyUsage', serverAuth: true },
          { name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) },
        ],
      });
      return { key: pems.private, cert: pems.cert };
    },
  };
}

/** A certificate for `names` signed by nobody a service trusts. */
export async function selfSignedCertificate(names: string[]): Promise<TestCertificate> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: names[0] ?? 'localhost' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + DAY_MS),
    extensions: [{ name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) }],
  });
  return { key: pems.private, cert: pems.cert };
}
