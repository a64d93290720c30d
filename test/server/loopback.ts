import type {Server} from 'node:http';
import type {AddressInfo} from 'node:net';

/**
 * Listens on `port` (0: a free one) of the loopback interface and resolves to the server's
 * origin; rejects when the port is taken.
 */
export async function listenOnLoopback(server: Server, port = 0): Promise<string> {
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject);
		server.listen(port, '127.0.0.1', () => {
			server.off('error', reject);
			resolve();
		});
	});
	return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes `server` at once: open keep-alive connections would hold `close()` for seconds. */
export async function closeNow(server: Server): Promise<void> {
	server.closeAllConnections();
	await new Promise<void>(resolve => {
		server.close(() => resolve());
	});
}
