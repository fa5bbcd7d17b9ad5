import { channelNumberStub, workspaceStub } from "../durable-objects/stubs";

// The one place outside the objects that holds their stubs. Everything above the engine calls the
// engine's typed functions, so an object's RPC surface can change behind them without a caller
// knowing; the dependency check keeps this module to the engine (.dependency-cruiser.mjs).

/** A workspace's object: the single record of each of its messages. */
export const workspaceObject = workspaceStub;

/** A connected number's object: its queue, its pace and its contacts' windows. */
export const numberObject = channelNumberStub;
