// One JSON request to the local API for the dev and bench scripts: the parsed
// body when it is JSON, and the raw text either way (for error messages).

/**
 * `json` is what JSON.parse gives (typed as TypeScript types JSON.parse): the scripts read
 * the fields they expect and check them, as they check `status`.
 * @typedef {{ status: number, json: ReturnType<typeof JSON.parse> | null, text: string }} ApiAnswer
 */

/**
 * @param {string} baseUrl @param {string} method @param {string} path @param {string} token @param {unknown} [body]
 * @param {Record<string, string>} [headers] more request headers (an Idempotency-Key)
 * @returns {Promise<ApiAnswer>}
 */
export async function callApi(baseUrl, method, path, token, body, headers = {}) {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { "Content-Type": "application/json" } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: callers use the text
  }
  return { status: res.status, json, text };
}
