#!/usr/bin/env node
// `npm run sdk:pack-check`: the SDK installs as a customer would install it. It is not published yet,
// so the tarball `npm pack` makes is what sdk/README.md tells people to install: pack it, install it
// into an empty project, import it with Node and typecheck a consumer against its types, and check
// that `npm publish --dry-run` accepts it. Node built-ins only.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SDK = join(ROOT, "sdk");
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");

/** @param {string} cmd @param {string[]} args @param {string} cwd */
function run(cmd, args, cwd) {
  return execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

const work = mkdtempSync(join(tmpdir(), "sdk-pack-"));
try {
  run("npm", ["pack", "--silent", "--pack-destination", work], SDK);
  const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"));
  if (!tarball) throw new Error("npm pack made no tarball");
  const app = join(work, "app");
  run("mkdir", ["-p", app], work);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  run("npm", ["install", "--silent", "--no-audit", "--no-fund", join(work, tarball)], app);
  // Runtime: the package's "exports" resolve and every public value is there.
  const exported = run(
    "node",
    [
      "--input-type=module",
      "-e",
      "const m = await import('@messaging-gateway/sdk'); console.log(Object.keys(m).sort().join(','))",
    ],
    app,
  ).trim();
  for (const name of [
    "MessagingClient",
    "MessagingClientV2",
    "ApiError",
    "verifyWebhook",
    "Paginated",
    "SEND_LIMITS",
    "messageV2",
  ]) {
    if (!exported.split(",").includes(name))
      throw new Error(`the installed SDK does not export ${name} (got ${exported})`);
  }
  // Types: a consumer with Node's own resolution finds the declarations through "exports" (skipLibCheck as
  // most projects: standardwebhooks' own .d.ts needs @types/node, which is not ours to require).
  writeFileSync(
    join(app, "index.ts"),
    "import { ApiError, MessagingClient, messageV2, type Media, type ReadMark, type SendMessageInput, type SendMessageInputV2 }\n" +
      '  from "@messaging-gateway/sdk";\n' +
      'const input: SendMessageInput = { channelNumberId: "cn_1", to: "5511999998888", text: { body: "hi" } };\n' +
      // The v2 types ship too: a template send typed from the v2 document.
      'const template: SendMessageInputV2 = { channelNumberId: "cn_1", to: "5511999998888", type: "template",\n' +
      '  template: { name: "order_update", language: "en_US", parameters: { body: ["Ana"] } } };\n' +
      'export const client = new MessagingClient({ apiKey: "k", baseUrl: "http://127.0.0.1:8787" });\n' +
      "export const send = () => client.v2.messages.send(template);\n" +
      // A paced batch, its outcomes typed.
      "export const batch = async () => (await client.v2.messages.sendPaced([template])).outcomes.map((o) => o.outcome);\n" +
      // A rich message built by its kind's builder.
      'export const photo = () => client.v2.messages.send(messageV2.image({ channelNumberId: "cn_1", to: "5511999998888" },\n' +
      '  { link: "https://cdn.example.com/parcel.png" }));\n' +
      // A read mark, typed, and the 502's operator fields on ApiError.
      "export const read = async (id: string): Promise<ReadMark | boolean | null> =>\n" +
      "  client.v2.messages.markRead(id, { typing: true }).catch((e: unknown) => (e instanceof ApiError ? e.retriable : null));\n" +
      // A media upload from bytes, typed as the stored file.
      "export const upload = (bytes: Uint8Array): Promise<Media> =>\n" +
      '  client.v2.media.upload(bytes, { contentType: "image/png", filename: "parcel.png" });\n' +
      "export { input };\n",
  );
  run(
    "node",
    [
      TSC,
      "--noEmit",
      "--strict",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--lib",
      "es2022,dom",
      "--skipLibCheck",
      "index.ts",
    ],
    app,
  );
  // Publishing: the registry would accept it (a dry run needs no login; its "not logged in" notice is expected).
  run("npm", ["publish", "--dry-run", "--silent"], SDK);
  console.log(
    `sdk: ${tarball} installs, imports (${exported.split(",").length} exports) and typechecks; publish --dry-run passes`,
  );
} catch (err) {
  const e = /** @type {{ message?: string, stdout?: string, stderr?: string }} */ (err);
  console.error(`sdk pack check failed: ${e.message ?? String(err)}\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
