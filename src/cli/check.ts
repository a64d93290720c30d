import {randomUUID} from 'node:crypto';
import {setTimeout as delay} from 'node:timers/promises';
import type {CheckOptions} from './args.js';
import {send, sendAndDrop, type Outgoing} from './http.js';
import type {Probe, ProbeContext, ProbeRequest, ProbeResult} from './probe.js';
import {probes as allProbes} from './probes/index.js';

/** The most requests a run sends, every probe included: what the go-ahead prompt says. */
export const requestLimit = (concurrency: number): number => 30 + concurrency;

/** A probe reached the run's request limit: it stops there, and says so. */
export class RequestLimitError extends Error {
	override name = 'RequestLimitError';
}

/** The context probes share: the request the options describe, and the slowest answer so far. */
export function probeContext(options: CheckOptions): ProbeContext {
	const [firstUser = {}] = options.users;
	let slowest = 0;
	let sent = 0;
	const limit = requestLimit(options.concurrency);
	const count = () => {
		if (sent >= limit) throw new RequestLimitError(`the run reached its limit of ${limit} requests (the go-ahead's count)`);
		sent++;
	};
	const outgoing = (init: ProbeRequest = {}): Outgoing => {
		const method = init.method ?? options.method;
		const preflight = method === 'OPTIONS';
		const headers: Record<string, string> = preflight ? {} : {'content-type': 'application/json', ...options.headers, ...(init.as ?? firstUser)};
		if (init.key !== undefined) headers['idempotency-key'] = init.key;
		Object.assign(headers, init.headers);
		return {method, url: options.url, headers, ...(preflight ? {} : {body: init.body ?? options.body})};
	};

	return {
		method: options.method,
		body: options.body,
		headers: outgoing().headers,
		users: options.users,
		origin: options.origin,
		concurrency: options.concurrency,
		newKey: () => `sendonce-check-${randomUUID()}`,
		async send(init) {
			count();
			const answer = await send(outgoing(init), options.timeout);
			slowest = Math.max(slowest, answer.ms);
			return answer;
		},
		async sendAndDrop(init) {
			count();
			await sendAndDrop(outgoing(init));
		},
		slowest: () => slowest,
		wait: async ms => delay(ms),
	};
}

/** Runs each probe in turn; a probe whose requests fail on the network fails with the error. */
export async function check(options: CheckOptions, {probes = allProbes, onResult}: {probes?: readonly Probe[]; onResult?: (result: ProbeResult) => void} = {}): Promise<ProbeResult[]> {
	const context = probeContext(options);
	const results: ProbeResult[] = [];
	for (const probe of probes) {
		let result: ProbeResult;
		try {
			result = {id: probe.id, title: probe.title, rule: probe.rule, ...await probe.run(context)};
		} catch (error) {
			result = error instanceof RequestLimitError ? {
				id: probe.id,
				title: probe.title,
				rule: probe.rule,
				verdict: 'warn',
				stopped: true,
				sent: `${options.method} ${options.url}, until the limit`,
				got: `stopped: ${error.message}, before this probe could decide`,
				fix: 'no verdict: the probes before it spent the run\'s requests (409s waited out); run this probe again on its own',
			} : {
				id: probe.id,
				title: probe.title,
				rule: probe.rule,
				verdict: 'fail',
				sent: `${options.method} ${options.url}`,
				got: `no answer: ${(error as Error).message}`,
				fix: 'the server must answer every request, however it arrives',
			};
		}

		results.push(result);
		onResult?.(result);
	}

	return results;
}
