import type { WorkspaceConfig } from "./workspace-config";

/** What the workspace object's modules share: its storage, bindings, identity, configuration and alarm. */
export interface WorkspaceContext {
  readonly storage: DurableObjectStorage;
  readonly sql: SqlStorage;
  readonly env: Env;
  /** The workspace this object serves (the name it was addressed by). */
  workspaceId(): string | null;
  loadConfig(workspaceId: string): Promise<WorkspaceConfig | null>;
  /** Makes sure the alarm fires no later than `at`. */
  wake(at: number): Promise<void>;
}
