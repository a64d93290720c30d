import {StoreError} from './errors/store-error.js';

/** Quota by its name (`QuotaExceededError`, Firefox's `NS_ERROR_DOM_QUOTA_REACHED`), legacy code or message (SQLite's, Safari's). */
function isQuota(error: unknown): boolean {
	const {name, code, message} = Object(error) as {name?: unknown; code?: unknown; message?: unknown};
	return code === 22 || code === 1014 || [name, message].some(text => typeof text == 'string' && /quota|SQLITE_FULL|disk is full/i.test(text));
}

/**
 * Any failure of a store, as a `StoreError`: quota problems as `STORE_QUOTA`. `doing` says what
 * failed in development builds; production builds pass `false`, and the store's message is all.
 */
export function toStoreError(error: unknown, doing: string | false): StoreError {
	if (error instanceof StoreError) return error;
	const detail = error instanceof Error ? error.message : String(error);
	return isQuota(error)
		? new StoreError('STORE_QUOTA', doing ? `The store is full; could not ${doing}: ${detail}` : detail, {cause: error})
		: new StoreError('STORE_UNAVAILABLE', doing ? `The store failed to ${doing}: ${detail}` : detail, {cause: error});
}
