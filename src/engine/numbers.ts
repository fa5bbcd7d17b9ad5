import type { NumberSendingState } from "../domain/channel-number-view";
import type { NormalizedError } from "../messages/status";
import type { ContactWindow } from "../durable-objects/channel-number/contract";
import { workspaceObject, numberObject } from "./objects";

export { CONFIRM_PROBE_MS } from "../durable-objects/channel-number/number-hold";
export type { ContactWindow };

/** A connected number's sending state: its queue, its pace and whether (and why) it is paused. */
export const numberSendingState = (env: Env, numberId: string): Promise<NumberSendingState> =>
  numberObject(env, numberId).sendingState();

/** Whether a contact's 24-hour window is open on a number (free-form messages are delivered inside it). */
export const contactWindow = (env: Env, numberId: string, phone: string): Promise<ContactWindow> =>
  numberObject(env, numberId).contactWindow(phone);

/**
 * A change to a workspace's rows in D1 (a number connected or gone, a new plan or quota) takes effect
 * at once: its object reloads what it keeps of them on its next call.
 */
export const workspaceChanged = (env: Env, workspaceId: string): Promise<void> =>
  workspaceObject(env, workspaceId).invalidateConfig();

/**
 * A change to a number's row in D1 (disconnected, new credentials) takes effect at once: its object
 * reloads it (a disconnected number fails what is still queued on it instead of sending it).
 */
export const numberChanged = (env: Env, numberId: string): Promise<void> =>
  numberObject(env, numberId).invalidateNumber();

/**
 * The operator refused a number's account (an account-level code, in a status or its webhooks): each
 * number pauses, as for the same answer to a call, and probes until a message goes through.
 */
export async function pauseNumbers(env: Env, numberIds: readonly string[], error: NormalizedError): Promise<void> {
  await Promise.all(numberIds.map((id) => numberObject(env, id).reportAccountError(error)));
}
