/*
 * The transcripts of docs/cli.md: `sendonce check` against sendonce/server on memory, and
 * against the server that looks a key up before it creates the order.
 * `npx tsx scripts/cli-transcript.ts` prints them; test/cli/transcript.test.ts compares them
 * with the page.
 */
import {createServer} from 'node:http';
import type {AddressInfo} from 'node:net';
import {main} from '../../src/cli/main.js';
import {toNodeHandler} from '../../src/server.js';
import {lookUpThenStore} from '../server/broken/look-up-then-store.js';
import {honestServer, type TestServer} from '../server/honest.js';

/** What each transcript checks, with which flags. */
export const TRANSCRIPTS: Array<{server: () => TestServer; flags: string[]}> = [
	{server: honestServer, flags: ['--origin', 'https://app.test', '--as', 'Authorization: Bearer alice', '--as', 'Authorization: Bearer bob']},
	{server: () => lookUpThenStore(), flags: ['-H', 'Authorization: Bearer alice']},
];

const shellWord = (word: string) => (/^[\w./:@=-]+$/.test(word) ? word : `'${word}'`);

/** A shell session: the command line, what it printed, and its exit code; served on `port` (0: any free one). */
export async function transcript(server: TestServer, flags: string[], port = 0): Promise<string> {
	const http = createServer(toNodeHandler(server.handle));
	await new Promise<void>(resolve => http.listen(port, 'localhost', resolve));
	try {
		const argv = ['check', `http://localhost:${(http.address() as AddressInfo).port}/orders`, '--json', '{"sku":"A1"}', ...flags, '--yes'];
		const printed: string[] = [];
		const code = await main(argv, {stdout: text => printed.push(text), stderr: text => printed.push(text), interactive: false, ask: async () => ''});
		return `$ npx sendonce ${argv.map(word => shellWord(word)).join(' ')}\n${printed.join('')}$ echo $?\n${code}\n`;
	} finally {
		http.closeAllConnections();
		await new Promise(resolve => http.close(resolve));
	}
}
