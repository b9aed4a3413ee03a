/**
 * Every service declared under proto/chainguard (the published surface) and proto/trellis
 * (Trellis's own additions), read from the generated file descriptors rather than from the
 * server's own list, so a test that walks them also catches a service the server forgot.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { DescFile, DescService } from "@bufbuild/protobuf";

export async function declaredServices(): Promise<DescService[]> {
  return (await declaredFiles()).flatMap((f) => f.services);
}

/** Every file descriptor generated from proto/chainguard and proto/trellis, in path order. */
export async function declaredFiles(): Promise<DescFile[]> {
  const files = ["gen/chainguard", "gen/trellis"].flatMap((dir) => {
    const root = path.resolve(dir);
    return (readdirSync(root, { recursive: true }) as string[])
      .filter((f) => f.endsWith("_pb.ts"))
      .sort()
      .map((f) => path.join(root, f));
  });
  const descs: DescFile[] = [];
  for (const file of files) {
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      const desc = value as DescFile | undefined;
      if (desc?.kind === "file") descs.push(desc);
    }
  }
  return descs;
}
