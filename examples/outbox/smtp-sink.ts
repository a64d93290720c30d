/**
 * A local mail server that keeps what it receives (smtp-server, on 127.0.0.1): each message's
 * Message-ID, job and subject, one JSON line per message in `MAIL_LOG`. It stands for the
 * provider, or a mailbox: a message received twice shows as two lines with one Message-ID.
 *
 * Told `lose-next-reply` (over IPC), it takes the next message, logs it, and drops the connection
 * before answering: the sender cannot tell, and sends it again. `LOSE_REPLIES=0.2` does that to a
 * fifth of the messages, and `DROP_CONNECTIONS=0.1` drops a tenth of the connections before any
 * message, until it is told `heal`.
 *
 *   SMTP_PORT=2525 MAIL_LOG=mail.jsonl tsx examples/outbox/smtp-sink.ts
 */
import {appendFileSync} from 'node:fs';
import type {Socket} from 'node:net';
import {resolve} from 'node:path';
import {pathToFileURL} from 'node:url';
import {SMTPServer} from 'smtp-server';

/** One message as the mail server received it. */
export interface ReceivedMail {
	messageId: string | undefined;
	jobId: string | undefined;
	subject: string | undefined;
	at: number;
}

export interface SinkOptions {
	port: number;
	/** Called with each message received, before the server answers it. */
	onMail: (mail: ReceivedMail) => void;
	/** Whether to drop the connection instead of answering this message (it was received). */
	loseReply?: () => boolean;
	/** Whether to drop this connection before any message. */
	dropConnection?: () => boolean;
}

/** The header fields of a message (unfolded, names lower-cased; the first of each). */
export function headerFields(raw: string): Map<string, string> {
	const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? '';
	const fields = new Map<string, string>();
	for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
		const colon = line.indexOf(':');
		if (colon <= 0) continue;
		const name = line.slice(0, colon).trim().toLowerCase();
		if (!fields.has(name)) fields.set(name, line.slice(colon + 1).trim());
	}

	return fields;
}

export async function startSink({port, onMail, loseReply = () => false, dropConnection = () => false}: SinkOptions): Promise<{port: number; close: () => Promise<void>}> {
	const sockets = new Map<number, Socket>();
	const server = new SMTPServer({
		authOptional: true,
		disabledCommands: ['STARTTLS'],
		logger: false,
		onConnect(session, callback) {
			if (dropConnection()) {
				sockets.get(session.remotePort)?.destroy();
				return;
			}

			callback();
		},
		onData(stream, session, callback) {
			const chunks: Buffer[] = [];
			stream.on('data', (chunk: Buffer) => chunks.push(chunk));
			stream.on('end', () => {
				const fields = headerFields(Buffer.concat(chunks).toString('utf8'));
				onMail({messageId: fields.get('message-id'), jobId: fields.get('x-job-id'), subject: fields.get('subject'), at: Date.now()});
				// Received, and the answer lost: the sender sees a dropped connection.
				if (loseReply()) sockets.get(session.remotePort)?.destroy();
				else callback();
			});
		},
	});
	// smtp-server's `server` is the net.Server: its sockets, by the client's port.
	const net = (server as unknown as {server: import('node:net').Server}).server;
	net.on('connection', (socket: Socket) => {
		const remote = socket.remotePort ?? 0;
		sockets.set(remote, socket);
		socket.once('close', () => sockets.delete(remote));
	});
	server.on('error', error => console.error('smtp sink:', error.message));
	await new Promise<void>((resolve, reject) => {
		net.once('error', reject);
		server.listen(port, '127.0.0.1', () => resolve());
	});
	return {
		port: (net.address() as {port: number}).port,
		close: async () => new Promise(resolve => {
			for (const socket of sockets.values()) socket.destroy();
			server.close(() => resolve());
		}),
	};
}

async function main(): Promise<void> {
	const log = process.env.MAIL_LOG;
	if (!log) throw new TypeError('Expected `MAIL_LOG` to name the file to append received messages to');
	const loseReplies = Number(process.env.LOSE_REPLIES ?? 0);
	const dropConnections = Number(process.env.DROP_CONNECTIONS ?? 0);
	let loseNext = false;
	let healed = false;
	process.on('message', message => {
		if (message === 'lose-next-reply') loseNext = true;
		if (message === 'heal') healed = true;
	});
	const sink = await startSink({
		port: Number(process.env.SMTP_PORT ?? 0),
		onMail(mail) {
			appendFileSync(log, `${JSON.stringify(mail)}\n`);
			process.send?.({type: 'mail', mail});
		},
		loseReply() {
			const lose = loseNext || (!healed && Math.random() < loseReplies);
			loseNext = false;
			return lose;
		},
		dropConnection: () => !healed && Math.random() < dropConnections,
	});
	process.send?.({type: 'listening', port: sink.port});
	// Started by another process (the demo, a test): gone with it.
	process.once('disconnect', () => process.exit(0));
	console.log(`smtp sink on 127.0.0.1:${sink.port}, logging to ${log}`);
	process.once('SIGTERM', () => {
		void sink.close().then(() => process.exit(0));
	});
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
	await main().catch((error: unknown) => {
		console.error(error instanceof Error ? error.message : error);
		process.exit(1);
	});
}
