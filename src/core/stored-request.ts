import type {IntentRecord} from './record.js';
import type {StoredRequest} from './types.js';

/**
 * The stored request as a form shows it (`snapshot.request`): frozen plain data, a body under a
 * JSON content type parsed again and frozen to its leaves, any other as its text. The headers stay
 * out: the ones that were not stored are gone, and the stored ones are the client's concern.
 */
export function storedRequest({url, method, headers: {'content-type': type}, body}: IntentRecord['request']): StoredRequest {
	let json: unknown;
	// JSON under a JSON content type only (docs/api.md): text that happens to parse (`42`, `true`) stays the text sent.
	if (/[/+]json\b/i.test(type!)) {
		try {
			// (No body: `JSON.parse` refuses `undefined`, and it is shown as none.)
			// JSON only where it gives back the very bytes sent: a number beyond 2^53, spaces or
			// escapes the app wrote would make a re-sent `json` another request. Those stay text.
			const parsed = JSON.parse(body!, (_, value: unknown) => Object.freeze(value)) as unknown;
			if (JSON.stringify(parsed) === body) json = parsed;
		} catch {
			// Not JSON: shown as text.
		}
	}

	// The content type goes with the body (it was stored; nothing secret): re-sending this request sends the same bytes, labelled the same.
	const labelled = type === undefined ? {} : {headers: Object.freeze({'content-type': type})};
	return Object.freeze(json === undefined ? {url, method, ...(body === undefined ? {} : {body}), ...labelled} : {url, method, json, ...labelled});
}
