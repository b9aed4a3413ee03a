/**
 * Builds a one-service descriptor at test time with arbitrary google.api.http rules, for the
 * start-up errors the generated test proto cannot contain (buf would accept them; the route
 * table must not). Messages come from the generated ItemService file.
 */
import { create, createFileRegistry, type DescService, type MessageInitShape, setExtension } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, MethodOptionsSchema } from "@bufbuild/protobuf/wkt";
import { file_google_api_annotations, http } from "../../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../../gen/google/api/http_pb.js";
import { file_trellis_testing_v1_items } from "../../gen/trellis/testing/v1/items_pb.js";

export interface SyntheticMethod {
  readonly name: string;
  /** Message name in package trellis.testing.v1; default GetItemRequest. */
  readonly input?: string;
  /** Default Item. */
  readonly output?: string;
  readonly rule?: MessageInitShape<typeof HttpRuleSchema>;
  readonly serverStreaming?: boolean;
}

let counter = 0;

/** A service `trellis.testing.synthetic<N>.Synthetic` with the given methods and rules. */
export function syntheticService(methods: readonly SyntheticMethod[]): DescService {
  const pkg = `trellis.testing.synthetic${counter++}`;
  const file = create(FileDescriptorProtoSchema, {
    name: `${pkg.replaceAll(".", "/")}/synthetic.proto`,
    package: pkg,
    syntax: "proto3",
    dependency: [file_trellis_testing_v1_items.proto.name, file_google_api_annotations.proto.name],
    service: [
      {
        name: "Synthetic",
        method: methods.map((m) => {
          const options = create(MethodOptionsSchema);
          if (m.rule) setExtension(options, http, create(HttpRuleSchema, m.rule));
          return {
            name: m.name,
            inputType: `.trellis.testing.v1.${m.input ?? "GetItemRequest"}`,
            outputType: `.trellis.testing.v1.${m.output ?? "Item"}`,
            serverStreaming: m.serverStreaming ?? false,
            options,
          };
        }),
      },
    ],
  });
  const registry = createFileRegistry(file, (name) => [file_trellis_testing_v1_items, file_google_api_annotations].find((f) => f.proto.name === name));
  const service = registry.getService(`${pkg}.Synthetic`);
  if (!service) throw new Error("synthetic service not built");
  return service;
}
