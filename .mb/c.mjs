import crypto from "node:crypto";
const key = crypto.randomBytes(32); const ko = crypto.createSecretKey(key);
const iv = crypto.randomBytes(12); const data = JSON.stringify(["abcdef0123456789abcdef0123456789", "x".repeat(60), "y".repeat(60), 0, 0, 100000, Date.now()]);
function t(name, f) { for (let i = 0; i < 20000; i++) f(); const n = 100000; const t0 = process.hrtime.bigint(); for (let i = 0; i < n; i++) f(); console.log(name, (Number(process.hrtime.bigint() - t0) / n / 1000).toFixed(2), "µs"); }
t("gcm raw key", () => { const c = crypto.createCipheriv("aes-256-gcm", key, iv); const b = c.update(data, "utf8"); c.final(); return Buffer.concat([iv, b, c.getAuthTag()]).toString("base64url"); });
t("gcm KeyObject", () => { const c = crypto.createCipheriv("aes-256-gcm", ko, iv); const b = c.update(data, "utf8"); c.final(); return Buffer.concat([iv, b, c.getAuthTag()]).toString("base64url"); });
const fk = crypto.randomBytes(120);
t("createHash x2 update", () => crypto.createHash("sha256").update("uid asc\n").update(fk).digest("hex").slice(0, 32));
t("crypto.hash", () => crypto.hash("sha256", Buffer.concat([Buffer.from("uid asc\n"), fk]), "hex").slice(0, 32));
