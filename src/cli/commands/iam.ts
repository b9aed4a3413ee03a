/** `trellis iam ...`: the IAM command group; each resource lives in its own file. */
import type { Command } from "commander";
import type { Io } from "../io.js";
import { registerCapabilities } from "./iam-capabilities.js";
import { registerGroups } from "./iam-groups.js";
import { registerIdentities } from "./iam-identities.js";
import { registerInvites } from "./iam-invites.js";
import { registerRoleBindings } from "./iam-role-bindings.js";
import { registerRoles } from "./iam-roles.js";

export function registerIam(program: Command, io: Io): void {
  const iam = program.command("iam").description("identity and access management: groups, identities, roles, role bindings, invites, capabilities");
  registerGroups(iam, io);
  registerIdentities(iam, io);
  registerRoles(iam, io);
  registerRoleBindings(iam, io);
  registerInvites(iam, io);
  registerCapabilities(iam, io);
}
