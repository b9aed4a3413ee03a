/**
 * connect-node's door (gRPC, gRPC-web, Connect, health, reflection): its router and its own
 * request/response conversions, driven by a few lines of ours instead of
 * `connectNodeAdapter`, for one reason: what happens when something fails.
 *
 * `connectNodeAdapter` converts the request synchronously and lets a throw there escape to
 * its caller (a missing authority is a ConnectError thrown, a malformed one a TypeError from
 * `new URL`), and when writing the response fails it only prints to the console and leaves
 * the response open, so the client waits until a timeout. Here a failure of either kind goes
 * to `onFailure` (the front door's: log it, answer INTERNAL or cut the request off), and the
 * rest is what the adapter does: same router options, same path lookup (query string
 * stripped), same conversions. A path the router does not hold goes to `onUnknownPath`
 * instead of the adapter's bare 404, which gRPC clients cannot read (unknown-method.ts).
 */
import type http from "node:http";
import type http2 from "node:http2";
import { Code, ConnectError, type ConnectRouter, createConnectRouter, createContextValues } from "@connectrpc/connect";
import { CALL_META, callMetaOf } from "../observe/call-meta.js";
import type { ConnectRouterOptions } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** What to do with the requests the router cannot serve itself. */
export interface ConnectDoorHandlers {
  /** A request whose conversion or response writing failed (not a client hanging up). */
  readonly onFailure: (req: Req, res: Res, err: unknown) => void;
  /** A request for a path the router does not serve (its query string stripped). */
  readonly onUnknownPath: (req: Req, res: Res, path: string, knownServices: ReadonlySet<string>) => void;
}

export interface ConnectDoor {
  /** Serves one request; throws nothing for any request. */
  (req: Req, res: Res): void;
  /** True for the paths the router serves ("/package.Service/Method"). */
  serves(path: string): boolean;
}

/**
 * The router on its own, before the door: which paths it serves is known before the failure
 * handling the door needs is built (that handling asks which paths are connect-node's).
 */
export interface ConnectRoutes {
  /** True for the paths the router serves ("/package.Service/Method"). */
  serves(path: string): boolean;
  door(handlers: ConnectDoorHandlers): ConnectDoor;
}

export function connectRoutes(options: ConnectRouterOptions & { readonly routes: (router: ConnectRouter) => void }): ConnectRoutes {
  // connect-node's default, which connectNodeAdapter would set.
  const router = createConnectRouter({ acceptCompression: [compressionGzip, compressionBrotli], ...options });
  options.routes(router);
  const paths = new Map(router.handlers.map((h) => [h.requestPath, h]));
  const services: ReadonlySet<string> = new Set(router.handlers.map((h) => h.service.typeName));
  const serves = (path: string) => paths.has(path);
  return { serves, door: (handlers) => Object.assign(serveWith(paths, services, handlers), { serves }) };
}

function serveWith(
  paths: ReadonlyMap<string, ConnectRouter["handlers"][number]>,
  services: ReadonlySet<string>,
  { onFailure, onUnknownPath }: ConnectDoorHandlers,
): (req: Req, res: Res) => void {
  return (req: Req, res: Res): void => {
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const handler = paths.get(path);
    if (!handler) {
      onUnknownPath(req, res, path, services);
      return;
    }
    let universal: ReturnType<typeof universalRequestFromNodeRequest>;
    try {
      universal = universalRequestFromNodeRequest(
        req,
        res,
        undefined,
        // Request id, peer and trace id for the call log, from the front door (call-meta.ts).
        createContextValues().set(CALL_META, callMetaOf(req)),
      );
    } catch (err) {
      onFailure(req, res, err);
      return;
    }
    handler(universal)
      .then((answer) => universalResponseToNodeResponse(answer, res))
      .catch((reason: unknown) => {
        // Aborted is how connect-node reports that the client went away mid-response (a
        // reset stream, a closed socket, a write after the end): nothing is left to answer.
        if (ConnectError.from(reason).code === Code.Aborted) {
          if (!res.writableEnded) res.destroy();
          return;
        }
        onFailure(req, res, reason);
      });
  };
}
