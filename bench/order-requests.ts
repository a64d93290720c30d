/* What the server benches share: their numeric flags, and one `POST /orders` with a key. */
import {request, type Agent} from 'node:http';

/** `--name=value` from the command line, if given. */
export const argument = (name: string): string | undefined => process.argv.find(item => item.startsWith(`--${name}=`))?.slice(name.length + 3);

/** A positive number flag (`--seconds=3`), `fallback` when absent; anything else is refused. */
export function numberFlag(name: string, fallback: number): number {
	const value = Number(argument(name) ?? fallback);
	if (!Number.isFinite(value) || value <= 0) throw new TypeError(`Expected \`--${name}\` to be a positive number`);
	return value;
}

/** `POST <url>/orders` with `key` and the JSON `body` over `agent`; resolves to the status once the answer is read. */
export async function postOrder(agent: Agent, url: string, key: string, body: string): Promise<number> {
	return new Promise((resolve, reject) => {
		const outgoing = request(`${url}/orders`, {method: 'POST', agent, headers: {'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'idempotency-key': key}}, incoming => {
			incoming.resume();
			incoming.on('end', () => resolve(incoming.statusCode ?? 0));
		});
		outgoing.on('error', reject);
		outgoing.end(body);
	});
}
