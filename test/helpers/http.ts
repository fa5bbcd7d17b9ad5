import { env, exports } from "cloudflare:workers";

export const BASE = "https://gateway.test";

/** A request through the Worker's real fetch handler. */
export function call(path: string, init: RequestInit = {}): Promise<Response> {
  return exports.default.fetch(new Request(`${BASE}${path}`, init));
}

export function api(path: string, key: string | null, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (key !== null) headers.set("Authorization", `Bearer ${key}`);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set("Content-Type", "application/json");
    body = JSON.stringify(init.json);
  }
  return call(`/api/v1${path}`, { ...init, headers, body });
}

export function admin(path: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("Authorization")) headers.set("Authorization", `Bearer ${env.ADMIN_TOKEN}`);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set("Content-Type", "application/json");
    body = JSON.stringify(init.json);
  }
  return call(`/admin/v1${path}`, { ...init, headers, body });
}

export async function json<T = Record<string, unknown>>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

export interface ErrorEnvelope {
  error: {
    code: string;
    message: string;
    requestId: string;
    details?: { path: string; rule: string; message: string; jobId?: string }[];
  };
}

/** Asserts the uniform error object and returns it. */
export async function expectError(res: Response, status: number, code: string): Promise<ErrorEnvelope> {
  const body = await json<ErrorEnvelope>(res);
  if (res.status !== status || body.error?.code !== code) {
    throw new Error(`expected ${status} ${code}, got ${res.status} ${JSON.stringify(body)}`);
  }
  const requestId = res.headers.get("X-Request-Id");
  if (!requestId || body.error.requestId !== requestId)
    throw new Error("X-Request-Id missing or not the body's requestId");
  return body;
}
