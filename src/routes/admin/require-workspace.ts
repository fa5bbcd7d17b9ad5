import { getWorkspaceWithLimits, type WorkspaceWithLimits } from "../../db/workspaces";
import { findByUuid } from "../../lib/job-id";
import { foundOr404 } from "../../lib/errors";

/** The workspace an admin path names, or 404. */
export async function requireWorkspace(db: D1Database, workspaceId: string): Promise<WorkspaceWithLimits> {
  return foundOr404(
    await findByUuid(workspaceId, (id) => getWorkspaceWithLimits(db, id), { asGiven: true }),
    "Workspace",
  );
}
