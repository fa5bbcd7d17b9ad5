import { z } from "@hono/zod-openapi";
import type { OutboundContent } from "../content";
import { boundedText } from "./fields";

// A location message: a pin at latitude and longitude, with an optional name and address
// (WhatsApp Cloud API, "Location messages": `{"latitude", "longitude", "name"?, "address"?}`).
// The operator documents no length for the name and address: ours keep a record small.

export const LOCATION_LIMITS = { name: 256, address: 1024 } as const;

export const LocationContent = z
  .strictObject(
    {
      latitude: z
        .number({ error: "location.latitude must be a number of degrees." })
        .min(-90, { error: "location.latitude is between -90 and 90." })
        .max(90, { error: "location.latitude is between -90 and 90." })
        .openapi({ example: -23.5614 }),
      longitude: z
        .number({ error: "location.longitude must be a number of degrees." })
        .min(-180, { error: "location.longitude is between -180 and 180." })
        .max(180, { error: "location.longitude is between -180 and 180." })
        .openapi({ example: -46.6559 }),
      name: boundedText("location.name", LOCATION_LIMITS.name, { example: "Acme Store Paulista" }).optional(),
      address: boundedText("location.address", LOCATION_LIMITS.address, {
        example: "Av. Paulista, 1578, São Paulo",
      }).optional(),
    },
    { error: "location must be an object with a latitude and a longitude." },
  )
  .openapi("LocationContent");
export type LocationContent = z.infer<typeof LocationContent>;

/** What a location send records: the operator's object (the request's own words: no `details`), and a summary. */
export function locationContent(l: LocationContent): OutboundContent {
  const place = [l.name, l.address].filter((s) => s !== undefined).join(", ");
  return {
    type: "location",
    body: `[location] ${place || `${l.latitude}, ${l.longitude}`}`,
    content: JSON.stringify(l),
    details: null,
  };
}
