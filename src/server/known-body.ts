/**
 * Bodies the adapters already read: `toNodeHandler` and `expressIdempotency` build the Fetch
 * `Request` from bytes they hold, and tell `idempotency()` here, which then fingerprints those
 * bytes instead of cloning the request's stream and reading it again (the clone is most of
 * the wrapper's cost on Node). A request built elsewhere is read through a clone.
 */
const known = new WeakMap<Request, Uint8Array>();

/** Records the bytes `request` was built from. */
export function rememberBody(request: Request, body: Uint8Array): void {
	known.set(request, body);
}

/** The request's body as bytes, leaving the request itself unread for the handler. */
export async function bodyOf(request: Request): Promise<Uint8Array> {
	return known.get(request) ?? new Uint8Array(await request.clone().arrayBuffer());
}
