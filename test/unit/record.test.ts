import fc from 'fast-check';
import {describe, expect, expectTypeOf, test} from 'vitest';
import * as z from 'zod/mini';
import {parseRecord, type IntentRecord} from '../../src/core/record.js';

/*
 * The hand-written guard replaced a zod/mini schema (issue 12): it must accept and refuse
 * exactly what that schema did, and give back the same record. The schema, as it was, with the
 * fields added since (`lastStatus` and `lastError`, issue 22):
 */
const timestamp = z.number().check(z.nonnegative());
const zodSchema = z.object({
	v: z.literal(1),
	key: z.string().check(z.minLength(1)),
	scope: z.string().check(z.minLength(1)),
	state: z.enum(['pending', 'sending', 'succeeded', 'failed', 'unresolved', 'expired', 'not-sent']),
	request: z.object({
		url: z.string().check(z.minLength(1)),
		method: z.enum(['POST', 'PUT', 'PATCH', 'DELETE']),
		headers: z.record(z.string(), z.string()),
		body: z.optional(z.string()),
	}),
	fingerprint: z.string().check(z.regex(/^[\da-f]{64}$/)),
	attempts: z.int().check(z.nonnegative()),
	createdAt: timestamp,
	expiresAt: timestamp,
	updatedAt: timestamp,
	reason: z.optional(z.string()),
	lastStatus: z.optional(z.int()),
	lastError: z.optional(z.string()),
	checks: z.optional(timestamp),
	lease: z.optional(z.object({owner: z.string(), until: timestamp})),
});

const valid = (): IntentRecord => ({
	v: 1,
	key: 'k-1',
	scope: 'checkout',
	state: 'sending',
	request: {url: 'https://api.test/orders', method: 'POST', headers: {'content-type': 'application/json'}, body: '{"a":1}'},
	fingerprint: 'a'.repeat(64),
	attempts: 2,
	createdAt: 1,
	expiresAt: 2,
	updatedAt: 1,
	reason: 'exhausted',
	lastStatus: 503,
	lastError: 'TimeoutError',
	lease: {owner: 'tab', until: 3},
});

/** Anything a store might hand back in place of a field. */
const junk = fc.oneof(
	fc.constant(undefined), fc.constant(null), fc.boolean(), fc.string(), fc.constant(''),
	fc.double(), fc.integer({min: -5, max: 5}), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, 2 ** 53, 1.5),
	fc.constant([]), fc.constant({}), fc.dictionary(fc.string(), fc.string()), fc.dictionary(fc.string(), fc.integer()),
	fc.constantFrom('pending', 'unresolved', 'PUT', 'GET', 'b'.repeat(64), 'A'.repeat(64)),
);

/** A valid record with some fields replaced, removed or added, at the top or one level down. */
const mutated = fc.tuple(
	fc.array(fc.tuple(fc.constantFrom(...Object.keys(valid()), 'extra', 'request.url', 'request.method', 'request.headers', 'request.body', 'request.extra', 'lease.owner', 'lease.until', 'lease.extra'), junk), {maxLength: 3}),
	fc.boolean(),
).map(([changes, dropOptional]) => {
	const record = structuredClone(valid()) as unknown as Record<string, Record<string, unknown> | unknown>;
	if (dropOptional) {
		delete record.reason;
		delete record.lastStatus;
		delete record.lastError;
		delete record.lease;
	}

	for (const [path, value] of changes) {
		const [name, field] = path.split('.') as [string, string?];
		if (!field) record[name] = value;
		else if (typeof record[name] === 'object' && record[name] !== null) (record[name] as Record<string, unknown>)[field] = value;
	}

	return record as unknown;
});

describe('the record guard', () => {
	test('agrees with the zod schema it replaced on every record, valid or not, and returns the same record', () => {
		fc.assert(fc.property(fc.oneof(mutated, junk), value => {
			const ours = parseRecord(value);
			const theirs = zodSchema.safeParse(value);
			expect('record' in ours).toBe(theirs.success);
			if ('record' in ours && theirs.success) {
				// As JSON: a record copied to leave a later version's fields out may read -0 as 0.
				expect(JSON.parse(JSON.stringify(ours.record))).toEqual(JSON.parse(JSON.stringify(theirs.data)));
				// Nothing else at any level, not even a field left undefined.
				const names = (object: object | undefined) => Object.keys(object ?? {}).sort();
				const json = JSON.parse(JSON.stringify(theirs.data)) as IntentRecord;
				expect([names(ours.record), names(ours.record.request), names(ours.record.lease)]).toEqual([names(json), names(json.request), names(json.lease)]);
			}
		}), {numRuns: 5000});
	});

	test('names the first field that is wrong', () => {
		expect(parseRecord({...valid(), fingerprint: 'nope'})).toEqual({problem: 'fingerprint: invalid'});
		expect(parseRecord({...valid(), request: {...valid().request, method: 'GET'}})).toEqual({problem: 'request.method: invalid'});
		expect(parseRecord('junk')).toEqual({problem: 'record: not an object'});
	});

	test('keeps only the fields it knows: what a later version adds is left out', () => {
		const record = parseRecord({...valid(), added: true, request: {...valid().request, added: true}, lease: {...valid().lease, added: true}});
		expect(record).toStrictEqual({record: valid()});
	});

	test('its type is what the schema lets through', () => {
		expectTypeOf<z.infer<typeof zodSchema>>().toEqualTypeOf<IntentRecord>();
	});
});
