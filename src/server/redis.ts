// `sendonce/server/redis`: keys in Redis, shared by every process behind a load balancer.
import {createHash} from 'node:crypto';
import type {ClaimResult, KeyStore, StoredAnswer} from './key-store.js';

/**
 * A node-redis client (v4 or v5, `createClient()`) or an ioredis client (`new Redis()`), as
 * far as this store uses it: one command at a time.
 *
 * @example
 * import type {RedisClientLike} from 'sendonce/server/redis';
 *
 * const fake: RedisClientLike = {sendCommand: async () => null};
 */
export type RedisClientLike =
	| {call(command: string, ...args: string[]): Promise<unknown>}
	| {sendCommand(args: string[]): Promise<unknown>};

/**
 * @example
 * import type {RedisKeyStoreOptions} from 'sendonce/server/redis';
 *
 * const options: RedisKeyStoreOptions = {prefix: 'shop:idempotency:'};
 */
export interface RedisKeyStoreOptions {
	/** Put before every key, to keep them apart from the app's own. @default 'sendonce:' */
	prefix?: string;
}

// A running claim is `running:<fingerprint>:<token>`; an answer is JSON (`{`…). Each script is
// one atomic step, and one round trip. `held` checks that ARGV[1] (`:<token>`) holds the key.
const HELD = `local function held(current, suffix)
	return current ~= false and string.sub(current, 1, 8) == 'running:' and string.sub(current, -#suffix) == suffix
end
local current = redis.call('GET', KEYS[1])
`;

const CLAIM = `local current = redis.call('GET', KEYS[1])
if current then return {current, redis.call('PTTL', KEYS[1])} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false`;

const RENEW = `${HELD}if not held(current, ARGV[1]) then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

// An expired claim is gone from Redis: then no one holds the key and the answer may be stored.
const COMPLETE = `${HELD}if current and not held(current, ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;

const RELEASE = `${HELD}if held(current, ARGV[1]) then redis.call('DEL', KEYS[1]) end
return 1`;

interface StoredJson {
	f: string;
	s: number;
	h: Record<string, string>;
	/** The body, base64. */
	b: string;
}

function describe(value: unknown): string {
	if (value === null) return 'null';
	return typeof value === 'object' ? `an object without \`call\` or \`sendCommand\`` : typeof value;
}

/** One command, sent the way the client at hand sends raw commands. */
function commander(client: unknown): (args: string[]) => Promise<unknown> {
	const candidate = client as {call?: unknown; sendCommand?: unknown} | null;
	// ioredis has both; its `sendCommand` takes a Command object, so `call` comes first.
	if (typeof candidate?.call === 'function') {
		const redis = candidate as {call(command: string, ...args: string[]): Promise<unknown>};
		return async ([command, ...args]) => redis.call(command!, ...args);
	}

	if (typeof candidate?.sendCommand === 'function') {
		const redis = candidate as {sendCommand(args: string[]): Promise<unknown>};
		return async args => redis.sendCommand(args);
	}

	throw new TypeError(`Expected \`client\` to be a node-redis (v4, v5) or ioredis client, got ${describe(client)}`);
}

const SHA1 = new Map([CLAIM, RENEW, COMPLETE, RELEASE].map(script => [script, createHash('sha1').update(script).digest('hex')]));

/**
 * Keys in Redis: a claim is one Lua script (get-or-set with a `PX` lease, so a crashed
 * process's claim expires after `lease`), and a stored answer expires with `ttl`. Works with
 * node-redis v4 and v5 and with ioredis; connect the client before the first request.
 *
 * @example
 * import {createClient} from 'redis';
 * import {idempotency} from 'sendonce/server';
 * import {redisKeyStore} from 'sendonce/server/redis';
 *
 * const redis = await createClient({url: process.env.REDIS_URL}).connect();
 * const once = idempotency({store: redisKeyStore(redis)});
 */
export function redisKeyStore(client: RedisClientLike, {prefix = 'sendonce:'}: RedisKeyStoreOptions = {}): KeyStore {
	const send = commander(client);
	if (typeof prefix !== 'string') throw new TypeError(`Expected \`prefix\` to be a string, got ${typeof prefix}`);

	// EVALSHA sends 40 bytes instead of the script; the first call after a restart loads it.
	const run = async (script: string, key: string, ...args: string[]): Promise<unknown> => {
		const tail = ['1', prefix + key, ...args];
		try {
			return await send(['EVALSHA', SHA1.get(script)!, ...tail]);
		} catch (error) {
			if (!String((error as {message?: unknown})?.message).includes('NOSCRIPT')) throw error;
			return send(['EVAL', script, ...tail]);
		}
	};

	return {
		async claim(id, {fingerprint, token, lease}): Promise<ClaimResult> {
			const found = await run(CLAIM, id, `running:${fingerprint}:${token}`, String(lease));
			if (found === null || found === undefined) return {state: 'claimed'};
			const [value, left] = found as [string, number | string];
			if (value.startsWith('running:')) {
				return {state: 'running', fingerprint: value.slice(8, value.lastIndexOf(':')), leaseLeft: Math.max(0, Number(left))};
			}

			const stored = JSON.parse(value) as StoredJson;
			const answer: StoredAnswer = {status: stored.s, headers: stored.h, body: Buffer.from(stored.b, 'base64')};
			return {state: 'done', fingerprint: stored.f, answer};
		},
		async renew(id, {token, lease}) {
			return Number(await run(RENEW, id, `:${token}`, String(lease))) === 1;
		},
		async complete(id, {token, fingerprint, answer, ttl}) {
			const stored: StoredJson = {f: fingerprint, s: answer.status, h: answer.headers, b: Buffer.from(answer.body).toString('base64')};
			return Number(await run(COMPLETE, id, `:${token}`, JSON.stringify(stored), String(ttl))) === 1;
		},
		async release(id, {token}) {
			await run(RELEASE, id, `:${token}`);
		},
	};
}
