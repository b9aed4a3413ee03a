/**
 * packaging/kubernetes/: every document is checked against the Kubernetes API's schemas (the
 * validators kubernetes-models compiles from Kubernetes' OpenAPI document, as kubeconform would),
 * then against what the server and the image need: the probes on the paths the server answers,
 * the drain and grace times adding up to the server's own shutdown grace, the database URL
 * from the Secret, the image's user, and a Service that reaches the pods' port.
 */
import fs from "node:fs";
import path from "node:path";
import { Deployment, type IDeployment } from "kubernetes-models/apps/v1";
import { type ISecret, type IService, Secret, Service } from "kubernetes-models/v1";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { LIMITS } from "../../src/server/config.js";

const DIR = path.resolve("packaging/kubernetes");

// biome-ignore lint/suspicious/noExplicitAny: a manifest is any JSON until its schema accepts it
type Manifest = any;

/** The models by `apiVersion kind`: a document of any other kind is an error. */
const MODELS: Record<string, new (data: Manifest) => { validate(): void }> = {
  "apps/v1 Deployment": Deployment,
  "v1 Service": Service,
  "v1 Secret": Secret,
};

/** Validates one document against its kind's schema; throws what the schema says. */
function validate(doc: Manifest): void {
  const Model = MODELS[`${doc?.apiVersion} ${doc?.kind}`];
  if (!Model) throw new Error(`no schema for apiVersion ${doc?.apiVersion} kind ${doc?.kind}`);
  new Model(doc).validate();
}

function manifests(): { file: string; doc: Manifest }[] {
  return fs
    .readdirSync(DIR)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((file) =>
      parseAllDocuments(fs.readFileSync(path.join(DIR, file), "utf8")).map((d) => {
        if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map((e) => e.message).join("; ")}`);
        return { file, doc: d.toJS() };
      }),
    );
}

function only<T>(kind: string): T {
  const found = manifests().filter((m) => m.doc.kind === kind);
  expect(found, `one ${kind}`).toHaveLength(1);
  return found[0]!.doc as T;
}

/** The image's user, as packaging/image/rootfs/etc/passwd (what the image is built from) has it. */
function imageUser(): { uid: number; gid: number } {
  const line = fs
    .readFileSync("packaging/image/rootfs/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("trellis:"));
  const [, , uid, gid] = (line ?? "").split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

describe("Kubernetes manifests (packaging/kubernetes)", () => {
  it("are a Deployment, a Service and a Secret, each valid against the Kubernetes schemas", () => {
    const all = manifests();
    expect(all.map((m) => m.doc.kind).sort()).toEqual(["Deployment", "Secret", "Service"]);
    for (const { file, doc } of all) expect(() => validate(doc), file).not.toThrow();
  });

  it("the schema check refuses a wrong type, a missing required field and an unknown kind", () => {
    const deployment = only<IDeployment>("Deployment");
    const wrongType = structuredClone(deployment) as Manifest;
    wrongType.spec.replicas = "two";
    expect(() => validate(wrongType)).toThrow(/replicas must be integer/);
    const noSelector = structuredClone(deployment) as Manifest;
    delete noSelector.spec.selector;
    expect(() => validate(noSelector)).toThrow(/required property selector/);
    const badProbe = structuredClone(deployment) as Manifest;
    badProbe.spec.template.spec.containers[0].readinessProbe.httpGet.port = { name: "http" };
    expect(() => validate(badProbe)).toThrow(/readinessProbe\/httpGet\/port/);
    expect(() => validate({ ...deployment, kind: "Deploymnet" })).toThrow(/no schema/);
  });

  it("the Deployment probes /readyz for readiness and /healthz for liveness and start-up, on the container's port", () => {
    const pod = only<IDeployment>("Deployment").spec!.template.spec!;
    const [container] = pod.containers;
    const port = container!.ports!.find((p) => p.containerPort === 8080)!;
    expect(port.name).toBe("http");
    expect(container!.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(container!.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(container!.startupProbe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(container!.args?.slice(0, 3)).toEqual(["serve", "--addr", "0.0.0.0:8080"]);
  });

  it("the Deployment drains before it stops: preStop, then --drain-seconds, then the server's shutdown grace fit in the grace period", () => {
    const pod = only<IDeployment>("Deployment").spec!.template.spec!;
    const container = pod.containers[0]!;
    const preStop = container.lifecycle?.preStop?.sleep?.seconds;
    expect(preStop).toBeGreaterThan(0);
    const args = container.args!;
    const drain = Number(args[args.indexOf("--drain-seconds") + 1]);
    expect(drain).toBeGreaterThan(0);
    // After SIGTERM: drain, then in-flight calls get up to the shutdown grace, then the pool closes.
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(Number(preStop) + drain + LIMITS.shutdownGraceMs / 1000 + 5);
  });

  it("the Deployment reads the database URL from the Secret and runs as the image's non-root user with a read-only root", () => {
    const secret = only<ISecret>("Secret");
    const pod = only<IDeployment>("Deployment").spec!.template.spec!;
    const container = pod.containers[0]!;
    const database = container.env!.find((e) => e.name === "TRELLIS_DATABASE");
    expect(database?.value).toBeUndefined();
    const ref = database?.valueFrom?.secretKeyRef;
    expect(ref?.name).toBe(secret.metadata!.name);
    expect(Object.keys(secret.stringData ?? secret.data ?? {})).toContain(ref?.key);
    expect(container.env!.find((e) => e.name === "TRELLIS_ISSUER_URL")?.value).toMatch(/^https:\/\//);

    const { uid, gid } = imageUser();
    expect(uid).toBeGreaterThan(0);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: uid, runAsGroup: gid });
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    // A read-only root needs a writable /tmp for the binary's private temporary files.
    const tmp = container.volumeMounts!.find((m) => m.mountPath === "/tmp");
    expect(pod.volumes!.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
  });

  it("the Service selects the Deployment's pods and targets their port", () => {
    const deployment = only<IDeployment>("Deployment");
    const service = only<IService>("Service");
    const labels = deployment.spec!.template.metadata!.labels!;
    expect(deployment.spec!.selector.matchLabels).toEqual(labels);
    for (const [key, value] of Object.entries(service.spec!.selector!)) expect(labels[key]).toBe(value);
    const portNames = deployment.spec!.template.spec!.containers[0]!.ports!.map((p) => p.name);
    for (const p of service.spec!.ports!) expect(portNames).toContain(p.targetPort);
  });
});
