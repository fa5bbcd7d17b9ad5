import { createServer, type IncomingHttpHeaders } from "node:http";

export interface Delivery {
  body: string;
  headers: IncomingHttpHeaders;
}

/** A customer endpoint on loopback that records every request and answers 204. */
export async function startReceiver(port: number) {
  const deliveries: Delivery[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({ body: Buffer.concat(chunks).toString("utf8"), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    /** Waits for the positive signal: the first delivery that `match` accepts. */
    async delivered(match: (d: Delivery) => boolean, timeoutMs = 20_000): Promise<Delivery> {
      for (const started = Date.now(); Date.now() - started < timeoutMs; await new Promise((r) => setTimeout(r, 100))) {
        const found = deliveries.find(match);
        if (found) return found;
      }
      throw new Error(`no matching delivery within ${timeoutMs} ms`);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
