import type { Context } from "hono";
import { decodeCursor, type Cursor } from "../lib/pagination";
import type { DashboardEnv } from "./context";

/** The `?cursor=` of a paged dashboard list; a damaged one starts from the first page. */
export function pageCursor(c: Context<DashboardEnv>): Cursor | undefined {
  try {
    return decodeCursor(c.req.query("cursor"));
  } catch {
    return undefined;
  }
}
