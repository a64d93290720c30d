import type {IntentRecord} from './record.js';
import type {StoredRequest} from './types.js';

/**
 * The stored request as a form shows it (`snapshot.request`): frozen plain data, a JSON body
 * parsed again and frozen to its leaves, a body that is not JSON as its text. The headers stay
 * out: the ones that were not stored are gone, and the stored ones are the client's concern.
 */
export function storedRequest({url, method, headers, body}: IntentRecord['request']): StoredRequest {
	let json: unknown;
	if (body !== undefined && /\bjson\b/i.test(headers['content-type'] ?? '')) {
		try {
			json = JSON.parse(body, (_, value: unknown) => Object.freeze(value));
		} catch {
			// A JSON type over bytes that are not JSON (a `body` the app labelled so): shown as text.
		}
	}

	return Object.freeze(json === undefined ? {url, method, ...(body === undefined ? {} : {body})} : {url, method, json});
}
