/**
 * google.rpc.Status as JSON: the REST error body (docs/published-api.md "Errors", AIP-193, grpc-gateway's shape):
 *
 *   {"code": 3, "message": "Invalid argument: name: ...",
 *    "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": ..., "domain": ...},
 *                {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [...]}]}
 *
 * `code` is the gRPC code number, not the HTTP status. `@type` is written first in each
 * detail so the body reads like the spec's examples.
 */
import { create, createRegistry, type JsonObject, toJson } from "@bufbuild/protobuf";
import { type Any, anyPack } from "@bufbuild/protobuf/wkt";
import type { ConnectError } from "@connectrpc/connect";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { file_google_rpc_status, StatusSchema } from "../../gen/google/rpc/status_pb.js";

const registry = createRegistry(file_google_rpc_error_details, file_google_rpc_status);

/** Renders a ConnectError (with outgoing or incoming details) as google.rpc.Status JSON. */
export function toStatusJson(err: ConnectError): JsonObject {
  const details: Any[] = err.details.map((d) =>
    "desc" in d ? anyPack(d.desc, create(d.desc, d.value)) : { $typeName: "google.protobuf.Any", typeUrl: `type.googleapis.com/${d.type}`, value: d.value },
  );
  const status = create(StatusSchema, { code: err.code, message: err.rawMessage, details });
  const json = toJson(StatusSchema, status, { registry }) as JsonObject;
  const rendered = ((json.details ?? []) as JsonObject[]).map((d) => {
    const { "@type": type, ...rest } = d;
    return { "@type": type ?? null, ...rest };
  });
  return { code: json.code ?? 0, message: json.message ?? "", details: rendered };
}
