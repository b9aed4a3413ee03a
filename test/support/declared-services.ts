/**
 * Every service declared under proto/chainguard (the published surface) and proto/trellis
 * (Trellis's own additions), read from the generated file descriptors rather than from the
 * server's own list, so a test that walks them also catches a service the server forgot.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { DescService } from "@bufbuild/protobuf";

export async function declaredServices(): Promise<DescService[]> {
  const files = ["gen/chainguard", "gen/trellis"].flatMap((dir) => {
    const root = path.resolve(dir);
    return (readdirSync(root, { recursive: true }) as string[])
      .filter((f) => f.endsWith("_pb.ts"))
      .sort()
      .map((f) => path.join(root, f));
  });
  const services: DescService[] = [];
  for (const file of files) {
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      const desc = value as { kind?: string; services?: DescService[] } | undefined;
      if (desc?.kind === "file") services.push(...(desc.services ?? []));
    }
  }
  return services;
}
