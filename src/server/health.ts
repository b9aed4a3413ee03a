/**
 * grpc.health.v1.Health for connect-node.
 *
 * One status for the whole server, read through `status()`: Check, Watch and List report it
 * for the empty service name ("the server") and for every service registered on the router.
 * The registered names are read from the router when a call arrives, so services registered
 * after the health service count too.
 *
 * - Check: unknown service name → NOT_FOUND.
 * - Watch: sends the current status at once, then again whenever it changes (polled once a
 *   second: one timer per open watch, nothing else), until the client goes away or the server
 *   shuts down (both abort the handler's signal). For an unknown service it sends
 *   SERVICE_UNKNOWN and keeps the call open, as the health protocol says.
 * - List: the status of "" and of every registered service.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";

const WATCH_POLL_MS = 1_000;

/** Waits until Watch should look at the status again; rejects when `signal` aborts. */
export type PollWait = (signal: AbortSignal) => Promise<unknown>;

const everySecond: PollWait = (signal) => sleep(WATCH_POLL_MS, undefined, { signal });

/**
 * `pollWait` is the clock Watch polls by: once a second in the server; tests pass one they
 * advance by hand, so they neither sleep nor bound anything by the wall clock.
 */
export function registerHealth(router: ConnectRouter, status: () => ServingStatus, pollWait: PollWait = everySecond): void {
  const isKnown = (service: string): boolean => service === "" || router.handlers.some((h) => h.service.typeName === service);

  router.service(Health, {
    check(req) {
      if (!isKnown(req.service)) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      return { status: status() };
    },

    async *watch(req, ctx) {
      let last: ServingStatus | undefined;
      while (!ctx.signal.aborted) {
        const current = isKnown(req.service) ? status() : ServingStatus.SERVICE_UNKNOWN;
        if (current !== last) {
          last = current;
          yield { status: current };
        }
        try {
          await pollWait(ctx.signal);
        } catch {
          return; // aborted: client gone or server shutting down
        }
      }
    },

    list() {
      const current = status();
      const names = new Set(["", ...router.handlers.map((h) => h.service.typeName)]);
      return { statuses: Object.fromEntries([...names].map((name) => [name, { status: current }])) };
    },
  });
}
