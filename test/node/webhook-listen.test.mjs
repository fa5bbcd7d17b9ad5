import { spawn } from "node:child_process";
import { createConnection } from "node:net";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PORT = 8961;

/** Whether something accepts connections on 127.0.0.1:PORT. @returns {Promise<boolean>} */
function listening() {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port: PORT });
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

/** @param {() => Promise<boolean>} check @param {number} ms */
async function waitFor(check, ms) {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100)))
    if (await check()) return true;
  return false;
}

describe("npm run webhook:listen", () => {
  it("releases its port when npm's own pid gets SIGTERM (npm signals its shell, which must be the listener itself)", async () => {
    const npm = spawn("npm", ["run", "--silent", "webhook:listen", "--", "--no-register"], {
      cwd: ROOT,
      env: { ...process.env, WEBHOOK_LISTEN_PORT: String(PORT) },
      stdio: "ignore",
    });
    try {
      expect(await waitFor(listening, 10_000)).toBe(true);
      npm.kill("SIGTERM");
      expect(await waitFor(async () => !(await listening()), 3_000)).toBe(true);
    } finally {
      npm.kill("SIGKILL");
    }
  });
});
