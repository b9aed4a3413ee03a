/**
 * The REST/JSON door as the front door sees it: the transcoder (src/transcode/, which knows
 * HTTP rules and JSON but nothing of our pipeline) wired to the same wrapped implementations
 * the RPC doors call, with a lean HandlerContext per call (handler-context.ts).
 *
 * It takes exactly the requests whose path is a route's (or the OpenAPI document's), decided
 * at once; the answer, or the error, is written later. Errors inside the pipeline were logged
 * and converted there; what escapes the transcoder's own error handling goes to `onFailure`.
 */
import { create, type DescMethod, type DescService, isMessage, type Message } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { refuseCredentialInUrl, URL_CHECKED } from "../auth/authenticate.js";
import type { Logger } from "../observe/logger.js";
import { CALL_META, callMetaOf } from "../observe/call-meta.js";
import { RestHandlerContext } from "../transcode/handler-context.js";
import { createRestHandler } from "../transcode/rest-handler.js";
import type { Door, NodeRequest, NodeResponse } from "./front-door.js";

type WrappedUnary = (req: unknown, ctx: HandlerContext) => unknown;

export interface RestDoorOptions {
  readonly services: readonly DescService[];
  /** The pipeline-wrapped implementation of every method (call-pipeline.ts). */
  readonly implOf: (method: DescMethod) => WrappedUnary;
  readonly errorDomain: string;
  readonly maxBodyBytes: number;
  /** The public URL clients use, for the OpenAPI document: the issuer URL. */
  readonly serverUrl: () => string;
  readonly shutdownSignal: AbortSignal;
  readonly log: Logger;
  readonly onFailure: (req: NodeRequest, res: NodeResponse, err: unknown) => void;
}

export function createRestDoor(options: RestDoorOptions): Door {
  const { implOf, shutdownSignal, log, onFailure } = options;
  const rest = createRestHandler({
    services: options.services,
    errorDomain: options.errorDomain,
    maxBodyBytes: options.maxBodyBytes,
    serverUrl: options.serverUrl,
    // Credentials in the URL are refused before the body is read or bound (an unknown query
    // parameter would otherwise be a 400), and the call's context says so (URL_CHECKED).
    screen: ({ url }) => refuseCredentialInUrl(url),
    // Errors inside the pipeline are logged there; this catches the rest (binding, rendering).
    onUnexpectedError: (err) => log.error({ err, protocol: "rest" }, "unexpected error"),
    async invokeUnary(method, request, call) {
      const fn = implOf(method);
      // A lean HandlerContext: its signal is linked only if read (handler-context.ts).
      const context = new RestHandlerContext({
        method,
        requestMethod: call.httpMethod,
        url: call.url,
        requestHeader: call.headers,
        requestSignal: () => call.signal,
        shutdownSignal,
      });
      context.values.set(CALL_META, callMetaOf(call.nodeRequest)).set(URL_CHECKED, true);
      try {
        const out = await fn(request, context);
        return (isMessage(out) ? out : create(method.output, out as never)) as Message;
      } finally {
        // Headers the pipeline set for the answer (v1's deprecation, a rate limit's), either way.
        const headers = context.touchedResponseHeader();
        if (headers) call.setResponseHeaders(headers);
        context.release();
      }
    },
  });
  return (req, res) => {
    if (!rest.takes(req)) return false;
    // The REST door answers its own errors; what escapes it is this request's failure, not
    // an unhandled rejection.
    rest.handle(req, res).catch((err: unknown) => onFailure(req, res, err));
    return true;
  };
}
