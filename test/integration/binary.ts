/*
 * Answers that are not UTF-8 JSON (issue 20): what a server sends for an order whose body names
 * one, byte for byte, so that a test can compare what the caller read with what was sent.
 */

/** The first 15 bytes of a PNG: not UTF-8, so any text decoding on the way changes them. */
export const PNG = Uint8Array.from([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44]);

/**
 * Text as servers do send it: a byte-order mark, UTF-8, and one byte that is not UTF-8. Fetch's
 * `text()` drops the mark and replaces the byte, so only bytes passed on unread survive whole.
 */
export const ODD_TEXT = Uint8Array.from([0xEF, 0xBB, 0xBF, 0x68, 0xC3, 0xA9, 0x6C, 0x6C, 0x6F, 0x20, 0xFF]);

/** What each kind of answer is sent as. */
export const ANSWERS = {
	png: {body: PNG, type: 'image/png'},
	octets: {body: PNG, type: 'application/octet-stream'},
	text: {body: ODD_TEXT, type: 'text/plain; charset=utf-8'},
} as const;

export type AnswerKind = keyof typeof ANSWERS;

/**
 * The contract server's `work` for `{order, answer: kind}`: a 201 with that kind's bytes; any
 * other body gets the usual JSON answer.
 */
export function binaryWork(body: unknown): {status: number; body: Uint8Array<ArrayBuffer>; type: string} | undefined {
	const kind = (body as {answer?: AnswerKind} | undefined)?.answer;
	return kind && kind in ANSWERS ? {status: 201, ...ANSWERS[kind]} : undefined;
}

/** The bytes of an ArrayBuffer, a view or a Blob, to compare with what was sent. */
export async function bytesOf(value: ArrayBuffer | ArrayBufferView | Blob): Promise<Uint8Array> {
	if (value instanceof Blob) return new Uint8Array(await value.arrayBuffer());
	return ArrayBuffer.isView(value) ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : new Uint8Array(value);
}
