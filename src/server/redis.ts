// `sendonce/server/redis`: keys in Redis, shared by every process behind a load balancer.
import {createHash, randomBytes} from 'node:crypto';
import type {ClaimResult, KeyStore, StoredAnswer} from './key-store.js';
import {optionsObject, refuseUnknown} from './unknown-options.js';
import {untilKnown} from './until-known.js';

/**
 * A node-redis client (v4, v5 or v6, `createClient()`) or an ioredis client (`new Redis()`), as
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

// A key is a hash: `s` its state (`r` running, `d` done, `f` free: released), `f` the
// fingerprint, `n` the fence, `l` the end of the lease (µs, Redis's clock), `a` the answer
// (JSON), `t` the nonce of the last answer or release written, or of the last claim with its
// fence (`nonce@fence`: a claim of the previous release, which leaves `t` as it was, changes the
// fence), `p` the fence a claim took over, `v` the format (2: with `t` and `p`; a hash without `v` was written by a sendonce before
// them, and reads the same). Each script is one atomic step and one round trip. Fences and times
// are written with `%.0f`: Lua's own `tostring` would round them to 14 digits. Every script is
// sent a nonce (ARGV[1]) and answers with it first: a client that pairs a reply with the wrong
// command (seen with node-redis after a connection reset) is caught instead of believed. And
// every script is idempotent per call: a client that sends a call again because the reply was
// lost with its connection (ioredis's `autoResendUnfulfilledCommands`, on by default) finds its
// own write by the nonce and gets the answer it would have had, not a phantom holder.
const PRELUDE = `local function micros()
	local t = redis.call('TIME')
	return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fmt(n) return string.format('%.0f', n) end
local nonce = ARGV[1]
`;

// Running, and the claim named by its fence (ARGV[2]); or this very call, sent again, already applied.
const HELD = `${PRELUDE}local held = redis.call('HMGET', KEYS[1], 's', 'n', 't')
if held[3] == nonce then return {nonce, 1} end
if held[1] ~= 'r' or held[2] ~= ARGV[2] then return {nonce, 0} end
`;

const CLAIM = `${PRELUDE}local now = micros()
local h = redis.call('HMGET', KEYS[1], 's', 'f', 'n', 'l', 'a', 't', 'p')
local state, fence = h[1], tonumber(h[3])
if state == 'r' and h[6] == nonce .. '@' .. h[3] then
	if h[7] then return {nonce, 'c', h[3], h[7]} end
	return {nonce, 'c', h[3]}
end
if state == 'd' then return {nonce, 'd', h[2], h[5]} end
if state == 'r' and tonumber(h[4]) > now then return {nonce, 'r', h[2], fmt(math.ceil((tonumber(h[4]) - now) / 1000))} end
local next = now
if fence and fence + 1 > next then next = fence + 1 end
redis.call('HSET', KEYS[1], 's', 'r', 'f', ARGV[2], 'n', fmt(next), 'l', fmt(now + tonumber(ARGV[3]) * 1000), 't', nonce .. '@' .. fmt(next), 'v', '2')
redis.call('HDEL', KEYS[1], 'a', 'p')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
if state == 'r' then
	redis.call('HSET', KEYS[1], 'p', fmt(fence))
	return {nonce, 'c', fmt(next), fmt(fence)}
end
return {nonce, 'c', fmt(next)}`;

const RENEW = `${HELD}redis.call('HSET', KEYS[1], 'l', fmt(micros() + tonumber(ARGV[3]) * 1000))
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return {nonce, 1}`;

const COMPLETE = `${HELD}redis.call('HSET', KEYS[1], 's', 'd', 'f', ARGV[3], 'a', ARGV[4], 't', nonce)
redis.call('HDEL', KEYS[1], 'l')
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {nonce, 1}`;

// Free, kept until its ttl: the key's next claim gets a larger fence.
const RELEASE = `${HELD}redis.call('HSET', KEYS[1], 's', 'f', 't', nonce)
redis.call('HDEL', KEYS[1], 'l')
return {nonce, 1}`;

interface StoredJson {
	s: number;
	h: Array<[string, string]>;
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

	throw new TypeError(`Expected \`client\` to be a node-redis (v4, v5, v6) or ioredis client, got ${describe(client)}`);
}

const messageOf = (error: unknown): string => String((error as {message?: unknown} | null)?.message);

/**
 * Whether Redis itself answered the call with an error (ioredis's `ReplyError`, node-redis's
 * `ErrorReply`; the text starts with its code: `ERR`, `NOSCRIPT`, `BUSY`): its fate is known, and
 * sending it again changes nothing.
 */
const answeredByRedis = (error: unknown): boolean => ['ReplyError', 'ErrorReply', 'SimpleError', 'BlobError'].includes(String((error as {constructor?: {name?: unknown}} | null)?.constructor?.name))
	|| /^[A-Z]{2,}[A-Z_]* /.test(messageOf(error));

const SHA1 = new Map([CLAIM, RENEW, COMPLETE, RELEASE].map(script => [script, createHash('sha1').update(script).digest('hex')]));
const KNOWN = new Set(['prefix']);

/**
 * Keys in Redis: a claim is one Lua script (a hash per key, its lease's end and its fence read
 * from Redis's own clock, so a crashed process's claim expires after `lease` whatever the
 * servers' clocks say), and a key is kept for `ttl`. Works with node-redis v4 to v6 and with
 * ioredis, on Redis 5 or later; connect the client before the first request.
 *
 * @example
 * import {createClient} from 'redis';
 * import {idempotency} from 'sendonce/server';
 * import {redisKeyStore} from 'sendonce/server/redis';
 *
 * const redis = await createClient({url: process.env.REDIS_URL}).connect();
 * const once = idempotency({store: redisKeyStore(redis)});
 */
export function redisKeyStore(client: RedisClientLike, options: RedisKeyStoreOptions = {}): KeyStore {
	const send = commander(client);
	refuseUnknown(optionsObject(options), KNOWN);
	const {prefix = 'sendonce:'} = options;
	if (typeof prefix !== 'string') throw new TypeError(`Expected \`prefix\` to be a string, got ${typeof prefix}`);

	// A nonce per call: this store's random part, then a counter.
	const base = randomBytes(6).toString('hex');
	let calls = 0;

	// EVALSHA sends 40 bytes instead of the script; the first call after a restart loads it.
	const evaluate = async (script: string, tail: string[]): Promise<unknown> => {
		try {
			return await send(['EVALSHA', SHA1.get(script)!, ...tail]);
		} catch (error) {
			if (!messageOf(error).includes('NOSCRIPT')) throw error;
			return send(['EVAL', script, ...tail]);
		}
	};

	// A call whose fate is unknown (its connection lost before the reply, or a reply paired with
	// another command) is sent again with its nonce, which makes it harmless: a script finds its own
	// write and answers what it would have. So a client library that rejects what was in flight when
	// its connection broke (node-redis) leaves no phantom claim, as one that sends it again (ioredis).
	const run = async (script: string, key: string, ...args: string[]): Promise<unknown[]> => {
		const nonce = `${base}${(++calls).toString(36)}`;
		const tail = ['1', prefix + key, nonce, ...args];
		try {
			return await untilKnown(async () => {
				const reply = await evaluate(script, tail);
				if (Array.isArray(reply) && reply[0] === nonce) return reply.slice(1);
				throw new Error(`sendonce/server/redis: the Redis client answered a call on ${JSON.stringify(prefix + key)} with a reply to another command (${JSON.stringify(reply).slice(0, 80)}); nothing of that reply was believed`);
			}, answeredByRedis);
		} catch (error) {
			if (!messageOf(error).includes('WRONGTYPE')) throw error;
			throw new Error(`sendonce/server/redis: ${JSON.stringify(prefix + key)} is not a hash: it was written by an earlier sendonce (keys live a day at most) or by the app; delete the keys under ${JSON.stringify(prefix)}, or give the store another \`prefix\``, {cause: error});
		}
	};

	return {
		async claim(id, {fingerprint, lease, ttl}): Promise<ClaimResult> {
			const [state, first, second] = await run(CLAIM, id, fingerprint, String(lease), String(ttl)) as [string, string, string | undefined];
			if (state === 'c') return second === undefined ? {state: 'claimed', fence: Number(first)} : {state: 'claimed', fence: Number(first), supersedes: Number(second)};
			if (state === 'r') return {state: 'running', fingerprint: first, leaseLeft: Math.max(0, Number(second))};
			const stored = JSON.parse(second!) as StoredJson;
			const answer: StoredAnswer = {status: stored.s, headers: stored.h, body: Buffer.from(stored.b, 'base64')};
			return {state: 'done', fingerprint: first, answer};
		},
		async renew(id, {fence, lease, ttl}) {
			return Number((await run(RENEW, id, String(fence), String(lease), String(ttl)))[0]) === 1;
		},
		async complete(id, {fence, fingerprint, answer, ttl}) {
			const stored: StoredJson = {s: answer.status, h: answer.headers, b: Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength).toString('base64')};
			return Number((await run(COMPLETE, id, String(fence), fingerprint, JSON.stringify(stored), String(ttl)))[0]) === 1;
		},
		async release(id, {fence}) {
			await run(RELEASE, id, String(fence));
		},
	};
}
