/**
 * The connect `HandlerContext` the REST door hands the call pipeline.
 *
 * Why not connect's `createHandlerContext`: it links an AbortController to the request and
 * shutdown signals up front and must be `abort()`ed after every call to unhook them, which
 * builds a `DOMException` and dispatches an abort event — a large share of a REST GetGroup's
 * CPU (docs/performance.md). Unary REST handlers almost never look at `signal`, so here the linked
 * controller (and the response header objects) are created only when first read, and
 * `release()` costs nothing when they never were.
 *
 * Semantics match connect's context for a call without a timeout: `signal` aborts when the
 * request signal (client went away) or the shutdown signal aborts, and — if anyone read it —
 * once the call is released, so work hanging off it stops with the call.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { createContextValues, type ContextValues, type HandlerContext } from "@connectrpc/connect";

export interface RestContextInit {
  readonly method: DescMethod;
  readonly requestMethod: string;
  readonly url: string;
  /** Taken as is (the REST door builds a fresh Headers per call); not copied. */
  readonly requestHeader: Headers;
  /** Read only if the handler reads `signal`, so a lazy getter stays lazy. */
  readonly requestSignal: () => AbortSignal;
  readonly shutdownSignal: AbortSignal;
}

const noTimeout = (): undefined => undefined;

export class RestHandlerContext implements HandlerContext {
  readonly service;
  readonly method;
  readonly protocolName = "rest";
  readonly requestMethod: string;
  readonly url: string;
  readonly requestHeader: Headers;
  readonly timeoutMs = noTimeout;
  readonly values: ContextValues = createContextValues();
  #init: RestContextInit;
  #controller: AbortController | undefined;
  #unlink: (() => void) | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;

  constructor(init: RestContextInit) {
    this.#init = init;
    this.method = init.method;
    this.service = init.method.parent;
    this.requestMethod = init.requestMethod;
    this.url = init.url;
    this.requestHeader = init.requestHeader;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) this.#controller = this.#link();
    return this.#controller.signal;
  }

  get responseHeader(): Headers {
    this.#responseHeader ??= new Headers();
    return this.#responseHeader;
  }

  get responseTrailer(): Headers {
    this.#responseTrailer ??= new Headers();
    return this.#responseTrailer;
  }

  /** The response headers, if the call ever touched them (none is the common case). */
  touchedResponseHeader(): Headers | undefined {
    return this.#responseHeader;
  }

  /** Ends the call: unhooks from the linked signals and aborts `signal` if it was ever read. */
  release(): void {
    const controller = this.#controller;
    if (controller === undefined) return;
    this.#unlink?.();
    if (!controller.signal.aborted) controller.abort(new DOMException("the call has ended", "AbortError"));
  }

  #link(): AbortController {
    const controller = new AbortController();
    const sources = [this.#init.requestSignal(), this.#init.shutdownSignal];
    const already = sources.find((s) => s.aborted);
    if (already) {
      controller.abort(already.reason);
      return controller;
    }
    const onAbort = (event: Event) => {
      this.#unlink?.();
      if (!controller.signal.aborted) controller.abort((event.target as AbortSignal).reason);
    };
    for (const s of sources) s.addEventListener("abort", onAbort, { once: true });
    this.#unlink = () => {
      for (const s of sources) s.removeEventListener("abort", onAbort);
      this.#unlink = undefined;
    };
    return controller;
  }
}
