/**
 * A throwaway self-signed certificate for TLS tests, made with the system's openssl: an EC
 * P-256 key, valid one day, for 127.0.0.1 and localhost.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export interface SelfSigned {
  readonly certFile: string;
  readonly keyFile: string;
}

/** Writes cert.pem and key.pem into `dir` (once: a second call reuses them). */
export function selfSignedCert(dir: string): SelfSigned {
  const certFile = path.join(dir, "cert.pem");
  const keyFile = path.join(dir, "key.pem");
  if (!fs.existsSync(certFile)) {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        keyFile,
        "-out",
        certFile,
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
      ],
      { stdio: "ignore", timeout: 15_000 },
    );
  }
  return { certFile, keyFile };
}
