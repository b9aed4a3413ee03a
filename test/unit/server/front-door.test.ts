/**
 * The front door's runner (src/server/front-door.ts): the doors in order, the first that takes
 * a request ends the walk, a step never takes one, and anything thrown is that request's
 * failure, handed to the guard instead of escaping to the listener.
 */
import { describe, expect, it } from "vitest";
import { type Door, frontDoor, type NodeRequest, type NodeResponse, step } from "../../../src/server/front-door.js";

const req = {} as NodeRequest;
const res = {} as NodeResponse;

describe("frontDoor", () => {
  it("walks the doors in order and stops at the first that takes the request", () => {
    const seen: string[] = [];
    const door =
      (name: string, takes: boolean): Door =>
      () => {
        seen.push(name);
        return takes;
      };
    const failures: unknown[] = [];
    frontDoor([step(() => seen.push("step")), door("a", false), door("b", true), door("c", true)], (_q, _s, err) => failures.push(err))(req, res);
    expect(seen).toEqual(["step", "a", "b"]);
    expect(failures).toEqual([]);
  });

  it("hands a throw to the guard, and the doors after it never run", () => {
    const boom = new Error("a door's bug");
    const failures: unknown[] = [];
    let after = false;
    frontDoor(
      [
        () => {
          throw boom;
        },
        () => (after = true),
      ],
      (_q, _s, err) => failures.push(err),
    )(req, res);
    expect(failures).toEqual([boom]);
    expect(after).toBe(false);
  });

  it("a request no door took is a failure of the list, not silence", () => {
    const failures: unknown[] = [];
    frontDoor([step(() => undefined)], (_q, _s, err) => failures.push(err))(req, res);
    expect(failures).toHaveLength(1);
    expect(() => frontDoor([], () => undefined)).toThrow(/at least one door/);
  });
});
