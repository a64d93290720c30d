import type {IncomingMessage} from 'node:http';
import {BodyTooLargeError} from './body-too-large.js';

/** Chunks as one buffer (the only chunk as is). */
function concat(chunks: Uint8Array[], total: number): Uint8Array {
	if (chunks.length === 1) return chunks[0]!;
	const bytes = new Uint8Array(total);
	let offset = 0;
	for (const chunk of chunks) {
		bytes.set(chunk, offset);
		offset += chunk.length;
	}

	return bytes;
}

/** Reads a Web stream to its end, at most `limit` bytes: beyond, it cancels the stream and rejects with a `BodyTooLargeError`. */
export async function readStream(stream: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array> {
	if (!stream) return new Uint8Array(0);
	const reader = stream.getReader();
	const chunks: Uint8Array[] = [];
	let total = 0;
	for (;;) {
		const {done, value} = await reader.read();
		if (done) return concat(chunks, total);
		total += value.length;
		if (total > limit) {
			// Not awaited: cancelling one branch of a tee (a cloned request) settles only once the other is cancelled too.
			reader.cancel().catch(() => undefined);
			throw new BodyTooLargeError(limit);
		}

		chunks.push(value);
	}
}

/**
 * Reads a Node request's body, at most `limit` bytes: beyond, it stops reading (the request is
 * left paused) and rejects with a `BodyTooLargeError`. With `keep`, the bytes are put back into
 * the stream once read, before it ends, so that a body parser after this one reads the body
 * as if no one had (`unshift`, before its `end` event).
 */
export async function readNodeBody(request: IncomingMessage, limit: number, {keep = false} = {}): Promise<Uint8Array> {
	return new Promise((resolve, reject) => {
		const chunks: Uint8Array[] = [];
		let total = 0;
		const settle = (error: unknown) => {
			request.off('readable', onReadable);
			request.off('end', onEnd);
			request.off('error', settle);
			request.off('aborted', onAborted);
			if (error) {
				reject(error);
				return;
			}

			const bytes = concat(chunks, total);
			// Put back in the same turn as the last read: the stream's `end` waits for the next one.
			if (keep && total > 0) request.unshift(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
			resolve(bytes);
		};

		// An empty body may end without a `readable` event for it.
		const onEnd = () => {
			settle(undefined);
		};

		const onAborted = () => {
			settle(new Error('The client closed the connection before the request body ended'));
		};

		const onReadable = () => {
			let chunk: Buffer | string | null;
			while ((chunk = request.read() as Buffer | string | null) !== null) {
				const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
				total += bytes.length;
				if (total > limit) {
					settle(new BodyTooLargeError(limit));
					return;
				}

				chunks.push(bytes);
			}

			// `complete`: the parser has seen the whole message, and every byte of it was read.
			if (request.complete) settle(undefined);
		};

		request.on('readable', onReadable);
		request.on('end', onEnd);
		request.on('error', settle);
		request.on('aborted', onAborted);
	});
}
