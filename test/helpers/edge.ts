import { vi, type MockInstance } from "vitest";

/**
 * The network edge of the Worker under test: the one place where the suite answers what the Worker
 * fetches from outside our system (the operator's API, customers' webhook receivers, the
 * DNS-over-HTTPS resolver). The Worker's handlers and objects run in the tests' isolate, so every
 * outbound request passes through this isolate's `globalThis.fetch`.
 *
 * By hand because @cloudflare/vitest-plugin 1.x has no request mocking of its own: `fetchMock`
 * (undici's MockAgent, from "cloudflare:test") went with vitest-pool-workers 0.x, and the plugin's
 * request-mocking example uses MSW (@msw/cloudflare), which this project does not depend on.
 *
 * One spy on `fetch` holds a stack of answers, newest on top. A request goes to the top one; an
 * answer that returns `undefined` passes it to the one below; below them all is whatever answered
 * before the edge was set up (the runtime's fetch). Each helper adds its answer and removes exactly
 * that one (two numbers connected at once do not remove each other's), and `vi.restoreAllMocks()`
 * clears the edge as it clears any spy.
 */
export type EdgeAnswer = (
  input: RequestInfo | URL,
  init: RequestInit | undefined,
) => Response | undefined | Promise<Response | undefined>;

interface Edge {
  spy: MockInstance<typeof fetch>;
  /** `globalThis.fetch` while the spy is in place. */
  spied: typeof fetch;
  dispatch: typeof fetch;
  answers: EdgeAnswer[];
}

const runtimeFetch = globalThis.fetch;
let edge: Edge | null = null;

/** The edge now; set up again if anything took `fetch` since (vi.restoreAllMocks, or a test's own spy). */
function currentEdge(): Edge {
  const fetchNow = globalThis.fetch;
  if (edge && fetchNow === edge.spied && edge.spy.getMockImplementation() === edge.dispatch) return edge;
  // What answers now (a test's own spy, or the runtime) stays below every answer added from here on.
  const below: typeof fetch = vi.isMockFunction(fetchNow)
    ? ((fetchNow.getMockImplementation() as typeof fetch | undefined) ?? runtimeFetch)
    : fetchNow;
  const answers: EdgeAnswer[] = [];
  const dispatch: typeof fetch = async (input, init) => {
    // The answers in place when the request left: one removed meanwhile (a connect that finished)
    // shifts no other out of its turn.
    for (const answer of [...answers].reverse()) {
      const answered = await answer(input, init);
      if (answered !== undefined) return answered;
    }
    return below(input, init);
  };
  const spy = vi.spyOn(globalThis, "fetch").mockImplementation(dispatch);
  edge = { spy, spied: globalThis.fetch, dispatch, answers };
  return edge;
}

/**
 * Puts `answer` on top of the edge: it sees each outbound request first and answers it, or returns
 * `undefined` to leave it to the answers below. Returns its removal.
 */
export function answerAtEdge(answer: EdgeAnswer): () => void {
  const { answers } = currentEdge();
  answers.push(answer);
  return () => {
    const at = answers.lastIndexOf(answer);
    if (at >= 0) answers.splice(at, 1);
  };
}
