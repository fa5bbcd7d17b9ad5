/**
 * An NDJSON response's text. Response.text() works but makes workerd warn that the body "does not
 * appear to be text" (it knows only text/* and JSON types), a line every test run printed.
 */
export async function ndjsonText(res: Response): Promise<string> {
  return new TextDecoder().decode(await res.arrayBuffer());
}
