/**
 * The front door (the dispatcher, as older comments call it): every request the listener
 * accepts walks one list of doors, in order, until one takes it. The list itself is written
 * out in the composition root (create-app.ts), with the reason each door stands where it
 * does; this module only says what a door is and runs the list inside the one guard every
 * request gets.
 *
 * A door is `(req, res) => boolean`: true when it took the request (answered it, or started
 * an answer that finishes later), false to hand it to the next door untouched. A step that
 * only prepares the request for the doors after it (attaching the request id, folding a
 * repeated header) is a door that never takes anything. The last door takes everything.
 *
 * The guard: anything a door throws is this request's failure alone, answered by `onFailure`
 * (request-errors.ts: INTERNAL in the request's own protocol, or the request cut off once its
 * answer has started); a door whose answer finishes later catches its own rejections the same
 * way.
 */
import type http from "node:http";
import type http2 from "node:http2";

export type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/** Takes the request (true) or passes it on (false). */
export type Door = (req: NodeRequest, res: NodeResponse) => boolean;

/** A door that never takes a request: `prepare` readies it for the doors after. */
export function step(prepare: (req: NodeRequest, res: NodeResponse) => void): Door {
  return (req, res) => {
    prepare(req, res);
    return false;
  };
}

/**
 * The listener's request handler: the doors in order, inside the guard. Throws at start-up if
 * the list is empty; a request no door took is a failure of the list, answered by `onFailure`.
 */
export function frontDoor(
  doors: readonly Door[],
  onFailure: (req: NodeRequest, res: NodeResponse, err: unknown) => void,
): (req: NodeRequest, res: NodeResponse) => void {
  if (doors.length === 0) throw new Error("the front door needs at least one door");
  return (req, res) => {
    try {
      for (let i = 0; i < doors.length; i++) {
        if ((doors[i] as Door)(req, res)) return;
      }
      throw new Error("no door took the request");
    } catch (err) {
      onFailure(req, res, err);
    }
  };
}
