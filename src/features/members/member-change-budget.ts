import { spendWorkspaceHourly, type Spent } from "../../domain/limit-check";

export type Stores = Pick<Env, "DB" | "THROTTLE">;

/** Every change of a workspace's members spends from its budget first, whoever asks (owner or operator). */
export function spendMemberChange(env: Stores, workspaceId: string): Promise<Spent> {
  return spendWorkspaceHourly(env, workspaceId, "memberChange", "member changes");
}
