import * as z from 'zod/mini';
import type {IntentMethod, IntentState} from './types.js';

/** The record format this version writes; a record with a higher `v` is a newer app's. */
export const RECORD_VERSION = 1;

/**
 * A stored intent, version 1. Plain data only: it must survive structured clone (IndexedDB)
 * and JSON (sessionStorage, AsyncStorage).
 *
 * Written by hand rather than inferred from the schema below, so that the published types
 * never make an app's compiler read zod's; a type test keeps the two in step.
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
	/** Which tab is sending, where Web Locks are missing; stale after `until`. */
	lease?: {owner: string; until: number} | undefined;
}

const timestamp = z.number().check(z.nonnegative());

/** What every record read from a store is validated against: {@link IntentRecord}. */
export const intentRecordSchema = z.object({
	v: z.literal(1),
	key: z.string().check(z.minLength(1)),
	scope: z.string().check(z.minLength(1)),
	state: z.enum(['pending', 'sending', 'succeeded', 'failed', 'unresolved', 'expired']),
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
	/** Why it is unresolved: informational, so a reason a later version adds is still valid here. */
	reason: z.optional(z.string()),
	/** Which tab is sending, where Web Locks are missing; stale after `until`. */
	lease: z.optional(z.object({owner: z.string(), until: timestamp})),
});

/** Validates a value read from a store. */
export function parseRecord(value: unknown): {record: IntentRecord} | {problem: string} {
	const result = intentRecordSchema.safeParse(value);
	if (result.success) return {record: result.data};
	const issue = result.error.issues[0];
	return {problem: issue ? `${issue.path.join('.') || 'record'}: ${issue.message}` : 'invalid record'};
}
