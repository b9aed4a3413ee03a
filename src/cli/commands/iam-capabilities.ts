/**
 * `trellis iam capabilities list`: the capabilities a role can hold, by their published names
 * (capabilities.proto's `name` option) with what each allows. Read from the generated
 * descriptors, so it needs no server and always matches this build.
 */
import type { Command } from "commander";
import { type CapabilityInfo, CAPABILITIES } from "../capabilities.js";
import type { GlobalOptions } from "../client.js";
import type { Io } from "../io.js";
import { resolveFormat, table } from "../output.js";
import { stringify as toYaml } from "yaml";

export function registerCapabilities(iam: Command, io: Io): void {
  const capabilities = iam.command("capabilities").description("capabilities: the permissions a role grants");
  capabilities
    .command("list")
    .description("list capabilities by their published names (accepted by `roles create --capability`)")
    .action((_o: unknown, cmd: Command) => {
      const format = resolveFormat(cmd.optsWithGlobals<GlobalOptions>().output, io.stdoutIsTty);
      const rows = CAPABILITIES;
      if (format === "id") io.out(rows.map((c) => `${c.name}\n`).join(""));
      else if (format === "json") io.out(`${JSON.stringify(rows, null, 2)}\n`);
      else if (format === "yaml") io.out(toYaml(rows));
      else {
        io.out(
          table<CapabilityInfo>(
            [
              { header: "NAME", cell: (c) => c.name },
              { header: "CAPABILITY", cell: (c) => c.capability },
              { header: "DESCRIPTION", cell: (c) => c.description },
            ],
            rows,
          ),
        );
      }
    });
}
