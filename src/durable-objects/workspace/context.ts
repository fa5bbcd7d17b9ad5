import type { WorkspaceConfig } from "./config";

/** What the workspace object's modules share: its storage, bindings, identity, configuration and alarm. */
export interface WorkspaceContext {
  readonly storage: DurableObjectStorage;
  readonly sql: SqlStorage;
  readonly env: Env;
  /** How long a published event may go without a delivery report (EVENT_CONFIRM_WITHIN_MS). */
  readonly confirmWithinMs: number;
  /** The workspace this object serves, once a call named it. */
  workspaceId(): string | null;
  rememberWorkspace(workspaceId: string): void;
  loadConfig(workspaceId: string): Promise<WorkspaceConfig | null>;
  /** Over its storage budget the object keeps less (docs/architecture.md, storage budget). */
  underPressure(): boolean;
  /** Makes sure the alarm fires no later than `at`. */
  wake(at: number): Promise<void>;
  /** Re-arms the alarm only if its due time moved (work was removed). */
  rearmIfMoved(): Promise<void>;
}
