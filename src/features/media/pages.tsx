import { Hono } from "hono";
import type { DashboardEnv } from "../../dashboard/context";
import { notFoundPage } from "../../dashboard/pages/errors";
import { mediaResponse } from "../../routes/message-media";
import { keptFile, openKeptFile } from "./stored-file";

/** Where a member downloads one of the workspace's stored files (an outbound message's, by its media id). */
export const storedFileHref = (mediaId: string) => `/dashboard/media/${encodeURIComponent(mediaId)}`;

export const mediaPages = new Hono<DashboardEnv>()
  // The same read as GET /api/v2/media/{id}/content, with the member's session, and always an
  // attachment (an <img> shows it all the same; opened on its own, it downloads instead of rendering here).
  .get("/media/:id", async (c) => {
    const { workspace_id: workspaceId } = c.get("session");
    const file = await keptFile(c.env, workspaceId, c.req.param("id"));
    const bytes = file.kept ? await openKeptFile(c.env, workspaceId, file.media) : null;
    if (!bytes) return notFoundPage(c);
    return mediaResponse(c, bytes, "attachment");
  });
