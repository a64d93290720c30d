// Hashing and random tokens, taken once when the server half loads. Node's own crypto when the
// runtime offers it synchronously (`process.getBuiltinModule`, Node ≥ 20.16, Bun): a SHA-256
// there costs a tenth of Web Crypto's, which hops to a thread pool. Web Crypto elsewhere
// (Deno, Workers). Taken at load, so that a test stubbing `globalThis.crypto` for a client in
// the same process (Hermes has only getRandomValues) leaves the server's alone.
interface NodeCrypto {
	createHash(algorithm: string): NodeHash;
}

interface NodeHash {
	update(data: Uint8Array): NodeHash;
	digest(encoding: 'hex'): string;
}

const nodeCrypto = (globalThis as {process?: {getBuiltinModule?: (name: string) => unknown}}).process?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
const {subtle} = globalThis.crypto;

/** A random token, unique per claim. */
export const randomUUID = globalThis.crypto.randomUUID.bind(globalThis.crypto);

function hex(buffer: ArrayBuffer): string {
	return Array.from(new Uint8Array(buffer), byte => byte.toString(16).padStart(2, '0')).join('');
}

/** One buffer of `parts`, in order. */
function joined(parts: readonly Uint8Array[]): Uint8Array {
	if (parts.length === 1) return parts[0]!;
	const bytes = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
	let offset = 0;
	for (const part of parts) {
		bytes.set(part, offset);
		offset += part.length;
	}

	return bytes;
}

/**
 * SHA-256 of `bytes` (or of `parts`, one after another), as lower-case hex (`node`: pass
 * undefined to use Web Crypto). Node hashes the parts where they are: a body is not copied.
 */
export async function sha256Hex(bytes: Uint8Array | readonly Uint8Array[], node: NodeCrypto | undefined = nodeCrypto): Promise<string> {
	const parts = bytes instanceof Uint8Array ? [bytes] : bytes;
	if (node) {
		const hash = node.createHash('sha256');
		for (const part of parts) hash.update(part);
		return hash.digest('hex');
	}

	return hex(await subtle.digest('SHA-256', joined(parts) as Uint8Array<ArrayBuffer>));
}
