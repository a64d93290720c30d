// What a server-half test opened (servers, pools, clients), closed after it in reverse order.
import type {Server} from 'node:http';
import type {AddressInfo} from 'node:net';
import {afterEach} from 'vitest';

export const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
	for (const close of closers.splice(0).reverse()) await close();
});

/** Listens on a free local port until the test ends; resolves to the server's URL. */
export async function listen(server: Server): Promise<string> {
	closers.push(async () => {
		server.closeAllConnections();
		await new Promise(resolve => server.close(resolve));
	});
	await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
