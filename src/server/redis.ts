// `sendonce/server/redis`: keys in Redis, shared by every process behind a load balancer.
import {createHash, randomBytes} from 'node:crypto';
import type {CheckResult, ClaimResult, KeyCheck, KeyStore, StoredAnswer} from './key-store.js';
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
// fence), `p` the fence a claim took over, `c` `1` on a key a check closed, `v` the format (2:
// with `t` and `p`; 3: a closed key; a hash without `v` was written by a sendonce before them, and
// reads the same). A closed key is written `s` `r`, with no fingerprint, the fence `closed` and a
// lease to the end of its ttl, for an instance of an earlier format that knows no `c` (a rolling
// deploy): its claim finds the key held and runs nothing, and since no fence sent is `closed`, no
// `renew`, `complete` or `release` of any format touches it. The marker, at the prefix alone (no
// key's id is empty), says since when Redis has kept every key (see SINCE). Each script is one
// atomic step and one round trip. Fences and times are written with `%.0f`: Lua's own `tostring` would round them to 14 digits. Every script is
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
local h = redis.call('HMGET', KEYS[1], 's', 'f', 'n', 'l', 'a', 't', 'p', 'c')
if h[8] then return {nonce, 'x'} end
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

// Since when (µs, Redis's clock) Redis has kept every key written: the marker's time (KEYS[2]:
// `since`, with the `evicted_keys`, `run_id` and `master_replid` that INFO gave when it was
// written: a promotion, even back to this process after a failover, changes the last), or now,
// written as the marker's new time, where the marker is missing (a new Redis, or a FLUSHALL or
// FLUSHDB, which deletes it with the keys), or Redis evicted keys or restarted (from a snapshot
// older than its last writes, or as a replica promoted before it had them all) since it was
// written. Nil where Redis does not answer INFO to a script (an ACL without `@dangerous`, a
// service that hides it): then nothing is proved.
const SINCE = `local function since(marker)
	local stats, server, replication = redis.pcall('INFO', 'stats'), redis.pcall('INFO', 'server'), redis.pcall('INFO', 'replication')
	if type(stats) ~= 'string' or type(server) ~= 'string' or type(replication) ~= 'string' then return nil end
	local evicted, run = string.match(stats, '\\nevicted_keys:(%d+)'), string.match(server, '\\nrun_id:(%x+)')
	local replid = string.match(replication, '\\nmaster_replid:(%x+)')
	if not evicted or not run or not replid then return nil end
	local m = redis.pcall('HMGET', marker, 'since', 'evicted', 'run_id', 'replid')
	if m.err then return nil end
	if m[1] and m[2] == evicted and m[3] == run and m[4] == replid then return tonumber(m[1]) end
	local now = micros()
	redis.call('HSET', marker, 'since', fmt(now), 'evicted', evicted, 'run_id', run, 'replid', replid)
	return now
end
`;

// Sent once, when the store is made: the marker, kept as it is or written now.
const MARK = `${PRELUDE}${SINCE}local kept = since(KEYS[1])
return {nonce, kept and fmt(kept) or ''}`;

// What is known of the key (ARGV[2]: `from`, ARGV[3]: `ttl`, both ms), holding nothing. A key
// never written is closed only where every claim since `from` is kept: `from` no earlier than
// the marker's time (KEYS[2]; sent without it, nothing is closed), and less than `ttl` ago (a
// claim's hash is kept `ttl`). A check sent again finds its own closed key, and answers `closed`
// again.
const CHECK = `${PRELUDE}${SINCE}local now = micros()
local h = redis.call('HMGET', KEYS[1], 's', 'f', 'l', 'a', 'c')
if h[5] then return {nonce, 'x'} end
if h[1] == 'd' then return {nonce, 'd', h[2], h[4]} end
if h[1] == 'r' and tonumber(h[3]) > now then return {nonce, 'r', fmt(math.ceil((tonumber(h[3]) - now) / 1000))} end
if h[1] then return {nonce, 'f'} end
if redis.call('EXISTS', KEYS[1]) == 1 then return {nonce, 'u'} end
local from, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
local kept = KEYS[2] and since(KEYS[2])
if not kept or from * 1000 < kept or now - from * 1000 >= ttl * 1000 then return {nonce, 'u'} end
redis.call('HSET', KEYS[1], 's', 'r', 'f', '', 'n', 'closed', 'l', fmt(now + ttl * 1000), 't', nonce, 'c', '1', 'v', '3')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {nonce, 'x'}`;

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

const SHA1 = new Map([CLAIM, RENEW, COMPLETE, RELEASE, MARK, CHECK].map(script => [script, createHash('sha1').update(script).digest('hex')]));
const KNOWN = new Set(['prefix']);

/**
 * Keys in Redis: a claim is one Lua script (a hash per key, its lease's end and its fence read
 * from Redis's own clock, so a crashed process's claim expires after `lease` whatever the
 * servers' clocks say), and a key is kept for `ttl`. Works with node-redis v4 to v6 and with
 * ioredis, on Redis 5 or later; connect the client before the first request. It answers checks,
 * closing a key only while Redis has kept every key since the key was made: a marker at the prefix
 * alone, written as the store is made, says since when, and a flush, an eviction or a restart
 * moves it on (read from INFO in a script: where an ACL refuses INFO, a check of a key with no
 * hash is `unknown`). A Redis that evicts keys (at `maxmemory`, under any policy but
 * `noeviction`) moves it on with every eviction, of any key: most such checks are `unknown`.
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
	const call = async (script: string, keys: string[], args: string[]): Promise<unknown[]> => {
		const key = keys[0]!;
		const nonce = `${base}${(++calls).toString(36)}`;
		const tail = [String(keys.length), ...keys, nonce, ...args];
		try {
			return await untilKnown(async () => {
				const reply = await evaluate(script, tail);
				if (Array.isArray(reply) && reply[0] === nonce) return reply.slice(1);
				throw new Error(`sendonce/server/redis: the Redis client answered a call on ${JSON.stringify(key)} with a reply to another command (${JSON.stringify(reply).slice(0, 80)}); nothing of that reply was believed`);
			}, answeredByRedis);
		} catch (error) {
			if (!messageOf(error).includes('WRONGTYPE')) throw error;
			throw new Error(`sendonce/server/redis: ${JSON.stringify(key)} is not a hash: it was written by an earlier sendonce (keys live a day at most) or by the app; delete the keys under ${JSON.stringify(prefix)}, or give the store another \`prefix\``, {cause: error});
		}
	};

	const run = async (script: string, id: string, ...args: string[]): Promise<unknown[]> => call(script, [prefix + id], args);

	const decode = (json: string): StoredAnswer => {
		const stored = JSON.parse(json) as StoredJson;
		return {status: stored.s, headers: stored.h, body: Buffer.from(stored.b, 'base64')};
	};

	// The marker, at the prefix alone: no key's id is empty, so no key is ever stored there. Written
	// (unless it is kept already) as the store is made, before its first claim or check is sent, so
	// that a check can close a key made since then; where that fails (a client not yet connected),
	// the first check that finds no hash writes it.
	const marker = prefix;
	const marked = call(MARK, [marker], []).then(() => undefined, () => undefined);

	return {
		async claim(id, {fingerprint, lease, ttl}): Promise<ClaimResult> {
			const [state, first, second] = await run(CLAIM, id, fingerprint, String(lease), String(ttl)) as [string, string, string | undefined];
			if (state === 'c') return second === undefined ? {state: 'claimed', fence: Number(first)} : {state: 'claimed', fence: Number(first), supersedes: Number(second)};
			if (state === 'r') return {state: 'running', fingerprint: first, leaseLeft: Math.max(0, Number(second))};
			if (state === 'x') return {state: 'closed'};
			return {state: 'done', fingerprint: first, answer: decode(second!)};
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
		/**
		 * One script, one round trip, holding nothing: the key's hash, and where there is none, the
		 * marker, which says since when Redis has kept every key (its first use by a store on this
		 * prefix, or its last FLUSHALL, FLUSHDB, eviction or restart). A key is closed (a hash that
		 * refuses every claim, kept `ttl`) only where `from` is since then and less than `ttl` ago by
		 * Redis's clock. On Redis Cluster the two keys must share a slot (a prefix with a hash tag,
		 * `{sendonce}:`): where Redis refuses them (CROSSSLOT), the check is sent again without the
		 * marker, and a key with no hash is `unknown`. Keys deleted by hand are not seen: delete the
		 * marker with them.
		 */
		async check(id, {from, ttl}: KeyCheck): Promise<CheckResult> {
			if (!Number.isFinite(from) || !Number.isSafeInteger(ttl) || ttl < 1) return {state: 'unknown'};
			await marked;
			const args = [String(Math.floor(from)), String(ttl)];
			let reply: unknown[];
			try {
				reply = await call(CHECK, [prefix + id, marker], args);
			} catch (error) {
				if (!messageOf(error).includes('CROSSSLOT')) throw error;
				reply = await call(CHECK, [prefix + id], args);
			}

			const [state, first, second] = reply as [string, string | undefined, string | undefined];
			switch (state) {
				case 'd': {
					return {state: 'done', fingerprint: first!, answer: decode(second!)};
				}

				case 'r': {
					return {state: 'running', leaseLeft: Math.max(0, Number(first))};
				}

				case 'f': {
					return {state: 'released'};
				}

				case 'x': {
					return {state: 'closed'};
				}

				default: {
					return {state: 'unknown'};
				}
			}
		},
	};
}
