// Runs in the vitest process (Node), not in workerd: the runtime's own log lines (uncaught
// exceptions of Durable Objects, warnings) reach this process's stdout or stderr. A test that provokes
// such a line on purpose declares it (test/helpers/runtime-log.ts, through the RUNTIME_LOG
// service binding below); matching lines are then captured for the test to assert on instead
// of being printed. Every other line is printed as usual.

interface Expectation {
  pattern: RegExp;
  seen: string[];
}

const expectations = new Map<string, Expectation>();

/** Routes stdout and stderr through the expectations; call once, from the vitest config. */
export function captureExpectedRuntimeLogs(): void {
  for (const stream of [process.stdout, process.stderr]) filter(stream);
}

function filter(stream: NodeJS.WriteStream): void {
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const filtered = (chunk: unknown, ...rest: unknown[]): boolean => {
    const text =
      typeof chunk === "string"
        ? chunk
        : chunk instanceof Uint8Array
          ? Buffer.from(chunk).toString("utf8")
          : String(chunk);
    for (const expectation of expectations.values()) {
      if (expectation.pattern.test(text)) {
        expectation.seen.push(text);
        const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
        callback?.();
        return true;
      }
    }
    return write(chunk, ...rest);
  };
  stream.write = filtered as typeof stream.write;
}

/** The RUNTIME_LOG service: POST /expect {id, source, flags}, GET /seen?id=, DELETE /expect?id=. */
export async function runtimeLogService(request: Request): Promise<Response> {
  const url = new URL(request.url);
  const id = url.searchParams.get("id") ?? "";
  if (request.method === "POST" && url.pathname === "/expect") {
    const { source, flags } = (await request.json()) as { source: string; flags: string };
    expectations.set(id, { pattern: new RegExp(source, flags), seen: [] });
    return new Response(null, { status: 204 });
  }
  if (request.method === "GET" && url.pathname === "/seen") return Response.json(expectations.get(id)?.seen ?? []);
  if (request.method === "DELETE" && url.pathname === "/expect") {
    expectations.delete(id);
    return new Response(null, { status: 204 });
  }
  return new Response("not found", { status: 404 });
}
