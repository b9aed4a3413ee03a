/**
 * AccountAssociation store records ⇄ proto messages.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type AccountAssociation, AccountAssociationSchema } from "../../../gen/chainguard/platform/iam/v2beta1/account_associations_pb.js";
import type { AccountAssociationRecord, AccountProviders } from "../../store/account-associations.js";

export function accountAssociationToProto(row: AccountAssociationRecord): AccountAssociation {
  const { amazon, google, chainguard, azure, github } = row.providers;
  return create(AccountAssociationSchema, {
    uid: row.uid,
    name: row.name,
    description: row.description,
    amazon: amazon && { account: amazon.account },
    google: google && { projectId: google.projectId, projectNumber: google.projectNumber },
    chainguard: chainguard && { serviceBindings: { ...chainguard.serviceBindings } },
    azure: azure && { tenantId: azure.tenantId, clientIds: { ...azure.clientIds } },
    github: github && {
      appInstallations: Object.fromEntries(
        Object.entries(github.appInstallations).map(([key, list]) => [
          key,
          { installations: list.map((i) => ({ installationId: BigInt(i.installationId), name: i.name })) },
        ]),
      ),
    },
    createTime: timestampFromMs(row.createTime),
    updateTime: timestampFromMs(row.updateTime),
  });
}

/** The provider blocks set on a message, in store form; unset blocks are absent. */
export function providersFromProto(a: AccountAssociation): AccountProviders {
  const out: { -readonly [K in keyof AccountProviders]: AccountProviders[K] } = {};
  if (a.amazon) out.amazon = { account: a.amazon.account };
  if (a.google) out.google = { projectId: a.google.projectId, projectNumber: a.google.projectNumber };
  if (a.chainguard) out.chainguard = { serviceBindings: { ...a.chainguard.serviceBindings } };
  if (a.azure) out.azure = { tenantId: a.azure.tenantId, clientIds: { ...a.azure.clientIds } };
  if (a.github) {
    out.github = {
      appInstallations: Object.fromEntries(
        Object.entries(a.github.appInstallations).map(([key, v]) => [
          key,
          v.installations.map((i) => ({ installationId: i.installationId.toString(), name: i.name })),
        ]),
      ),
    };
  }
  return out;
}

/** Every provider block with its default (empty) values, in store form. */
export const EMPTY_PROVIDERS: Required<AccountProviders> = providersFromProto(
  create(AccountAssociationSchema, { amazon: {}, google: {}, chainguard: {}, azure: {}, github: {} }),
) as Required<AccountProviders>;
