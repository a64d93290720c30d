/**
 * Whether a handler's answer gives its key up instead of being stored: a 5xx (unless
 * `storeServerErrors`) says the work may not have happened and a retry should run it; 408,
 * 425 and 429 say "try again later", and a stored one would answer every retry the same for a
 * whole `ttl`.
 */
export function releases(status: number, storeServerErrors: boolean): boolean {
	if (status === 408 || status === 425 || status === 429) return true;
	return status >= 500 && !storeServerErrors;
}
