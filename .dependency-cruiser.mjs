// The house's picture, checked by `npm run check:deps` (dependency-cruiser; .ci/run runs it after lint).
// docs/architecture.md ("Boundaries") says the same in prose: change the two together.
//
// src/ is a stack of floors, lowest first. A module may import its own floor and the floors below it,
// never a floor above: what a floor needs from above is handed down as a value or a type of its own floor.
// Today's folders stand on the floor the target layout gives their contents; the target's folder names
// (messages/, rules/, operator/, engine/, features/) are placed too, so a folder moved there keeps its rules.

/** @typedef {{ name: string, comment: string, paths: string[] }} Floor */

/** @type {Floor[]} */
const FLOORS = [
  {
    name: "lib",
    comment: "the ground floor: errors, crypto, clock, ids, pagination; the Worker's vars and request context",
    paths: ["src/lib/", "src/config.ts", "src/context.ts"],
  },
  {
    name: "messages",
    comment:
      "the message vocabulary: statuses, kinds, records, views, filters, what a send and a report carry (lib/ only)",
    paths: ["src/messages/"],
  },
  {
    name: "rules",
    comment: "the pure rules, which speak the vocabulary (domain/ is documented as pure: its I/O is debt)",
    paths: ["src/domain/", "src/rules/"],
  },
  {
    name: "edges",
    comment:
      "what talks to the outside: the operator (operator/), customers' webhook endpoints, the D1 stores the objects or the operator's adapters read (db/)",
    paths: ["src/operator/", "src/webhooks/", "src/db/"],
  },
  {
    name: "objects",
    comment: "the Durable Objects and their job modules, reached from above only through the engine",
    paths: ["src/durable-objects/"],
  },
  {
    name: "engine",
    comment: "the front door to the objects: typed calls, the only importer of the stubs",
    paths: ["src/engine/"],
  },
  {
    name: "entries",
    comment:
      "what a request, a queue batch or a cron tick enters: the control plane by feature (routes, pages, use cases, D1 stores), the remaining routes and pages, consumers, jobs",
    paths: ["src/routes/", "src/dashboard/", "src/middleware/", "src/queue/", "src/scheduled/", "src/features/"],
  },
  { name: "app", comment: "the Hono app: middleware, error envelope, routers", paths: ["src/app.ts"] },
  { name: "worker", comment: "the Worker's handlers and the objects' classes it exports", paths: ["src/index.ts"] },
];

/** A folder ("src/lib/") or a file ("src/app.ts") as a regular expression over resolved paths. */
const pattern = (/** @type {string} */ path) =>
  "^" + path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + (path.endsWith("/") ? "" : "$");

const OBJECTS = "^src/durable-objects/";
const STUBS = "^src/durable-objects/stubs\\.ts$";
const ENGINE = "^src/engine/";
/** The engine's one hold on the stubs: the rest of the engine calls the objects through it. */
const ENGINE_OBJECTS = "^src/engine/objects\\.ts$";
/** The objects' classes, which the Worker's entry exports (wrangler.toml binds them by these names). */
const OBJECT_CLASSES = [
  "^src/durable-objects/workspace/workspace\\.ts$",
  "^src/durable-objects/channel-number/channel-number\\.ts$",
  "^src/durable-objects/history/history\\.ts$",
  "^src/durable-objects/throttle\\.ts$",
];

/** @type {import("dependency-cruiser").IForbiddenRuleType[]} */
const upward = FLOORS.slice(0, -1).map((floor, index) => ({
  name: `up-from-${floor.name}`,
  comment: `${floor.name} (${floor.comment}) imports only its own floor and those below it`,
  severity: "error",
  from: { path: floor.paths.map(pattern) },
  to: { path: FLOORS.slice(index + 1).flatMap((above) => above.paths.map(pattern)) },
}));

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-circular-across-folders",
      comment: "an import circle through two folders of src/: it ties their floors into one",
      severity: "error",
      from: { path: "^(src/[^/]+)" },
      to: { circular: true, viaSomeNot: "^$1(/|$)" },
    },
    {
      name: "no-circular",
      comment: "an import circle inside one folder: its modules can be neither read nor changed one at a time",
      severity: "error",
      from: { path: "^(src/[^/]+)" },
      to: { circular: true, viaOnly: "^$1(/|$)" },
    },
    ...upward,
    {
      name: "stubs-outside-engine",
      comment:
        "the objects' stubs are held by one module of the engine (engine/objects.ts): everything above calls the engine",
      severity: "error",
      from: { path: "^src/", pathNot: [ENGINE_OBJECTS, OBJECTS] },
      to: { path: STUBS },
    },
    {
      name: "engine-objects-outside-engine",
      comment: "engine/objects.ts hands out the stubs to the engine's own modules only: nothing above holds a stub",
      severity: "error",
      from: { path: "^src/", pathNot: [ENGINE] },
      to: { path: ENGINE_OBJECTS },
    },
    {
      name: "object-internals-outside-engine",
      comment: "an object's modules are its own: only the engine (and index.ts, exporting the classes) imports them",
      severity: "error",
      from: { path: "^src/", pathNot: [ENGINE, OBJECTS, "^src/index\\.ts$"] },
      to: { path: OBJECTS, pathNot: STUBS },
    },
    {
      name: "index-imports-object-classes-only",
      comment: "index.ts exports the objects' classes; anything else of theirs it needs comes through the engine",
      severity: "error",
      from: { path: "^src/index\\.ts$" },
      to: { path: OBJECTS, pathNot: OBJECT_CLASSES },
    },
    {
      name: "not-in-the-picture",
      comment: "every module of src/ stands on a floor of FLOORS in .dependency-cruiser.mjs: place a new folder there",
      severity: "error",
      from: {},
      to: { path: "^src/", pathNot: FLOORS.flatMap((floor) => floor.paths.map(pattern)) },
    },
    {
      name: "feature-entries-on-top",
      comment:
        "a feature's routes and pages are what the app mounts: no use case, store, consumer, job or middleware imports one",
      severity: "error",
      from: {
        path: "^src/(features|queue|scheduled|middleware|engine|durable-objects|db|domain|lib|operator|webhooks)/",
        pathNot: "(pages|routes)\\.tsx?$",
      },
      to: { path: "^src/features/[^/]+/[a-z-]*(pages|routes)\\.tsx?$" },
    },
    {
      name: "src-stays-in-src",
      comment: "the Worker imports its own modules and packages, never the tests', the scripts' or the bench's",
      severity: "error",
      from: { path: "^src/" },
      to: { pathNot: ["^src/", "^node_modules/", "^cloudflare:"] },
    },
    {
      name: "not-to-dev-dep",
      comment: "what the Worker imports ships with it: a package it needs is one of package.json's dependencies",
      severity: "error",
      from: { path: "^src/" },
      to: { dependencyTypes: ["npm-dev"] },
    },
    {
      name: "not-to-unresolvable",
      comment: "an import the check cannot resolve escapes every rule above: fix the path or the resolver options",
      severity: "error",
      from: {},
      // The runtime's own modules (cloudflare:workers) exist inside workerd only.
      to: { couldNotResolve: true, pathNot: "^cloudflare:" },
    },
  ],
  options: {
    // The ratchet: .dependency-cruiser-known-violations.json lists today's debt. `--ignore-known` passes what it
    // lists and fails on anything new; an entry that no longer occurs fails too, until the baseline shrinks
    // (`npx depcruise src --baseline`, which in shrink-only mode removes the fixed ones and never adds).
    baseline: { mode: "shrink-only", staleEntriesSeverity: "error" },
    doNotFollow: { path: "node_modules" },
    // A type-only import ties two floors as much as a value import does.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".js", ".mjs"],
      mainFields: ["module", "main", "types", "typings"],
    },
  },
};
