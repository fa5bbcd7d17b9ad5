// A client may pass its own id for tracing; anything that could smuggle log
// noise or header tricks is replaced by one of ours.
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

export function resolveRequestId(clientValue: string | undefined): string {
  if (clientValue && SANE_REQUEST_ID.test(clientValue)) return clientValue;
  return `req_${crypto.randomUUID().replaceAll("-", "")}`;
}
