import type {IntentMethod, IntentState} from './types.js';

/** The record format this version writes; a record with a higher `v` is a newer app's. */
export const RECORD_VERSION = 1;

/**
 * A stored intent, version 1. Plain data only: it must survive structured clone (IndexedDB)
 * and JSON (sessionStorage, AsyncStorage).
 */
export interface IntentRecord {
	v: 1;
	key: string;
	scope: string;
	state: IntentState;
	request: {
		url: string;
		method: IntentMethod;
		headers: Record<string, string>;
		body?: string | undefined;
	};
	/** SHA-256 of method, URL and body, in hex. */
	fingerprint: string;
	attempts: number;
	createdAt: number;
	expiresAt: number;
	updatedAt: number;
	/** An `UnresolvedReason`; any string, so that a reason a later version adds stays valid. */
	reason?: string | undefined;
	/**
	 * With `reason`: the status of the answer that ended the last attempt, and the `name` of the
	 * error that ended it (`TimeoutError`, `TypeError`): what the page says again after a reload.
	 */
	lastStatus?: number | undefined;
	lastError?: string | undefined;
	/**
	 * How many seconds the server keeps the key, where it said it answers a check of it
	 * (`Idempotency-TTL`): learned from an answer, or known when the intent was made.
	 */
	checks?: number | undefined;
	/** Which tab is sending, where Web Locks are missing; stale after `until`. */
	lease?: {owner: string; until: number} | undefined;
}

type Check = (value: unknown) => boolean;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const text: Check = value => typeof value === 'string';
const filled: Check = value => text(value) && value !== '';
const time: Check = value => typeof value === 'number' && value >= 0 && Number.isFinite(value);
const oneOf = (...values: string[]): Check => value => values.includes(value as string);
/** How many fields `object` has (none for undefined), without making their list. */
function size(object: object | undefined): number {
	let count = 0;
	for (const _ in object) count++;
	return count;
}

const optional = (check: Check): Check => value => value === undefined || check(value);

/**
 * Each field of a record and its check, in the order they are reported. Every value read from
 * a store passes here before it is used: a record is a record only when all of them hold.
 */
const FIELDS: Array<[string, Check]> = [
	['v', value => value === RECORD_VERSION],
	['key', filled],
	['scope', filled],
	['state', oneOf('pending', 'sending', 'succeeded', 'failed', 'unresolved', 'expired', 'not-sent')],
	['request', isObject],
	['request.url', filled],
	['request.method', oneOf('POST', 'PUT', 'PATCH', 'DELETE')],
	['request.headers', value => isObject(value) && Object.values(value).every(text)],
	['request.body', optional(text)],
	['fingerprint', value => text(value) && /^[\da-f]{64}$/.test(value as string)],
	['attempts', value => Number.isSafeInteger(value) && (value as number) >= 0],
	['createdAt', time],
	['expiresAt', time],
	['updatedAt', time],
	['reason', optional(text)],
	['lastStatus', optional(Number.isSafeInteger)],
	['lastError', optional(text)],
	['checks', optional(time)],
	['lease', optional(isObject)],
	['lease.owner', text],
	['lease.until', time],
];

/** `FIELDS` with each path split once, not once per record read: `list()` reads thousands. */
const PATHS = FIELDS.map(([path, check]) => [path, check, ...path.split('.')] as [string, Check, string, string?]);

/** Every field's name, nested ones too. */
const NAMES = PATHS.map(([, , name, field]) => field ?? name);

/**
 * Validates a value read from a store: the record with only the fields it knows (what a later
 * version added is left out), or the first field that is wrong.
 */
export function parseRecord(value: unknown): {record: IntentRecord} | {problem: string} {
	if (!isObject(value)) return {problem: 'record: not an object'};
	let known = 0;
	for (const [path, check, name, field] of PATHS) {
		const parent = value[name];
		// A nested field is checked only where its optional parent is there.
		if (field && parent === undefined) continue;
		const current = field ? (parent as Record<string, unknown>)[field] : parent;
		if (!check(current)) return {problem: `${path}: invalid`};
		if (current !== undefined) known++;
	}

	const {request, lease} = value as unknown as IntentRecord;
	// Where every field is one this version knows (counted, not listed: `list()` reads thousands), the value is the record.
	if (size(value) + size(request) + size(lease) === known) return {record: value as unknown as IntentRecord};
	// Else a copy with only those: JSON keeps the names it is given, at every level, so the headers' own are put back.
	const record = JSON.parse(JSON.stringify(value, NAMES)) as IntentRecord;
	record.request.headers = {...request.headers};
	return {record};
}

/**
 * Why an intent is unresolved, as its record keeps it: the reason, the status of the last answer
 * and the name of the last error, where there was one. Never a body or a header.
 */
export type Cause = Pick<IntentRecord, 'reason' | 'lastStatus' | 'lastError'>;
