/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha) for connect-node.
 *
 * Hand-written on purpose: no npm package supports connect-node. @grpc/reflection and the
 * other packages on the registry are built on grpc-js `Server.addService` and proto-loader
 * definitions, and connect-es has no reflection of its own (connectrpc/connect-es#507 is
 * still open). protobuf-es already embeds every file descriptor in the generated code, so the
 * handler only has to index those descriptors and answer the five request kinds.
 *
 * The index is built once, when `registerReflection` is called: the files of the given
 * services, the reflection service files and `extraFiles` (e.g. google/rpc/error_details so
 * tools can decode error details), each with all its dependencies, google/protobuf WKTs
 * included. Descriptors restored by protobuf-es carry no comments (source_code_info is
 * stripped at codegen); everything else (options, json_name) is present.
 *
 * Reflection is a bidi stream, so it needs HTTP/2 whatever the protocol (gRPC, gRPC-web,
 * Connect). A file response carries the requested file plus every transitive dependency not
 * yet sent on the same stream, as grpc-go does.
 */
import { toBinary, type DescFile, type DescService } from "@bufbuild/protobuf";
import { type DescriptorProto, type FieldDescriptorProto, FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** google.rpc.Code values used in error_response. */
const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;

/** The request fields we read; v1 and v1alpha messages are identical on the wire. */
interface ReflectionRequest {
  readonly messageRequest:
    | { readonly case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; readonly value: string }
    | { readonly case: "fileContainingExtension"; readonly value: { readonly containingType: string; readonly extensionNumber: number } }
    | { readonly case: undefined; readonly value?: undefined };
}

/** The `message_response` oneof, as a plain init object valid for both versions. */
type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

interface ReflectionIndex {
  readonly serviceNames: readonly string[];
  /** File name (with .proto) to file. */
  readonly files: ReadonlyMap<string, DescFile>;
  /** Fully-qualified name (no leading dot) of a message, enum, service, method or extension. */
  readonly symbols: ReadonlyMap<string, DescFile>;
  /** Extendee type name to extension number to the file declaring the extension. */
  readonly extensions: ReadonlyMap<string, ReadonlyMap<number, DescFile>>;
  /** Fully-qualified names of all messages (for all_extension_numbers_of_type). */
  readonly messages: ReadonlySet<string>;
  /** Serialized FileDescriptorProto per file name, encoded once. */
  readonly encoded: ReadonlyMap<string, Uint8Array>;
}

export function registerReflection(router: ConnectRouter, services: readonly DescService[], extraFiles: readonly DescFile[] = []): void {
  const index = buildIndex([...services, v1.ServerReflection, v1alpha.ServerReflection], extraFiles);
  // Same code for both versions; `sent` tracks the files already sent on one stream.
  router.service(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const r of requests) yield { validHost: r.host, originalRequest: r, messageResponse: answer(index, r, sent) };
    },
  });
  router.service(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const r of requests) yield { validHost: r.host, originalRequest: r, messageResponse: answer(index, r, sent) };
    },
  });
}

function buildIndex(services: readonly DescService[], extraFiles: readonly DescFile[]): ReflectionIndex {
  const files = new Map<string, DescFile>();
  const symbols = new Map<string, DescFile>();
  const extensions = new Map<string, Map<number, DescFile>>();
  const messages = new Set<string>();
  const encoded = new Map<string, Uint8Array>();
  const visit = (file: DescFile): void => {
    const name = file.proto.name;
    if (files.has(name)) return;
    files.set(name, file);
    encoded.set(name, toBinary(FileDescriptorProtoSchema, file.proto));
    // Walk the descriptor proto itself rather than nestedTypes(): protobuf-es leaves map entry
    // messages (e.g. Group.ResourceLimitsEntry) out of DescMessage.nestedMessages.
    const proto = file.proto;
    const scope = proto.package ? `${proto.package}.` : "";
    const addExtensions = (exts: readonly FieldDescriptorProto[], prefix: string): void => {
      for (const ext of exts) {
        symbols.set(prefix + ext.name, file);
        const extendee = stripDot(ext.extendee);
        const byNumber = extensions.get(extendee) ?? new Map<number, DescFile>();
        byNumber.set(ext.number, file);
        extensions.set(extendee, byNumber);
      }
    };
    const addMessages = (msgs: readonly DescriptorProto[], prefix: string): void => {
      for (const msg of msgs) {
        const typeName = prefix + msg.name;
        symbols.set(typeName, file);
        messages.add(typeName);
        for (const e of msg.enumType) symbols.set(`${typeName}.${e.name}`, file);
        addExtensions(msg.extension, `${typeName}.`);
        addMessages(msg.nestedType, `${typeName}.`);
      }
    };
    addMessages(proto.messageType, scope);
    for (const e of proto.enumType) symbols.set(scope + e.name, file);
    addExtensions(proto.extension, scope);
    for (const svc of proto.service) {
      symbols.set(scope + svc.name, file);
      for (const method of svc.method) symbols.set(`${scope}${svc.name}.${method.name}`, file);
    }
    file.dependencies.forEach(visit);
  };
  for (const s of services) visit(s.file);
  extraFiles.forEach(visit);
  const serviceNames = [...new Set(services.map((s) => s.typeName))];
  return { serviceNames, files, symbols, extensions, messages, encoded };
}

function answer(index: ReflectionIndex, request: ReflectionRequest, sent: Set<string>): ReflectionAnswer {
  const req = request.messageRequest;
  switch (req.case) {
    case "listServices":
      return { case: "listServicesResponse", value: { service: index.serviceNames.map((name) => ({ name })) } };
    case "fileByFilename":
      return fileResponse(index, index.files.get(req.value), `file not found: ${req.value}`, sent);
    case "fileContainingSymbol": {
      const symbol = stripDot(req.value);
      return fileResponse(index, index.symbols.get(symbol), `symbol not found: ${symbol}`, sent);
    }
    case "fileContainingExtension": {
      const type = stripDot(req.value.containingType);
      const file = index.extensions.get(type)?.get(req.value.extensionNumber);
      return fileResponse(index, file, `extension not found: ${type}(${req.value.extensionNumber})`, sent);
    }
    case "allExtensionNumbersOfType": {
      const type = stripDot(req.value);
      if (!index.messages.has(type)) return error(NOT_FOUND, `message type not found: ${type}`);
      const numbers = [...(index.extensions.get(type)?.keys() ?? [])].sort((a, b) => a - b);
      return { case: "allExtensionNumbersResponse", value: { baseTypeName: type, extensionNumber: numbers } };
    }
    default:
      return error(UNIMPLEMENTED, "unsupported reflection request");
  }
}

/** The file itself (always, even if sent before) plus its transitive dependencies not yet sent. */
function fileResponse(index: ReflectionIndex, file: DescFile | undefined, notFound: string, sent: Set<string>): ReflectionAnswer {
  if (!file) return error(NOT_FOUND, notFound);
  const out: Uint8Array[] = [];
  const queue = [file];
  const seen = new Set<string>();
  while (queue.length > 0) {
    const next = queue.shift()!;
    const name = next.proto.name;
    if (seen.has(name)) continue;
    seen.add(name);
    const first = next === file;
    if (!first && sent.has(name)) continue; // its dependencies went out with it
    sent.add(name);
    out.push(index.encoded.get(name)!);
    queue.push(...next.dependencies);
  }
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
}

function stripDot(name: string): string {
  return name.startsWith(".") ? name.slice(1) : name;
}

function error(errorCode: number, errorMessage: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode, errorMessage } };
}
