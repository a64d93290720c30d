// Hashing and random tokens, taken once when the server half loads. Node's own crypto when the
// runtime offers it synchronously (`process.getBuiltinModule`, Node ≥ 20.16, Bun): a SHA-256
// there costs a tenth of Web Crypto's, which hops to a thread pool. Web Crypto elsewhere
// (Deno, Workers). Taken at load, so that a test stubbing `globalThis.crypto` for a client in
// the same process (Hermes has only getRandomValues) leaves the server's alone.
interface NodeCrypto {
	createHash(algorithm: string): {update(data: Uint8Array): {digest(encoding: 'hex'): string}};
}

const nodeCrypto = (globalThis as {process?: {getBuiltinModule?: (name: string) => unknown}}).process?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
const {subtle} = globalThis.crypto;

/** A random token, unique per claim. */
export const randomUUID = globalThis.crypto.randomUUID.bind(globalThis.crypto);

function hex(buffer: ArrayBuffer): string {
	return Array.from(new Uint8Array(buffer), byte => byte.toString(16).padStart(2, '0')).join('');
}

/** SHA-256 of `bytes`, as lower-case hex (`node`: pass undefined to use Web Crypto). */
export async function sha256Hex(bytes: Uint8Array, node: NodeCrypto | undefined = nodeCrypto): Promise<string> {
	if (node) return node.createHash('sha256').update(bytes).digest('hex');
	return hex(await subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
}
