// Web Crypto, taken once when the server half loads: Node ≥ 20, Bun, Deno and Workers all have
// it, and a test that stubs `globalThis.crypto` for a client in the same process (Hermes has
// only getRandomValues) leaves the server's alone.
const {subtle} = globalThis.crypto;
const randomUUID = globalThis.crypto.randomUUID.bind(globalThis.crypto);

export {randomUUID, subtle};
