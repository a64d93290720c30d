// A compact SHA-256 for runtimes without Web Crypto's `subtle` (React Native's Hermes,
// pages on insecure origins). Well-kept libraries cost 1.7–2.7 kB gzipped, which would eat a
// sixth of the package's budget for a fallback; this is the FIPS 180-4 algorithm in ~0.5 kB,
// checked against node:crypto in test/sha256.test.ts.

const K = new Uint32Array(64);
const H0 = new Uint32Array(8);

function fractionBits(x: number): number {
	return ((x - Math.floor(x)) * 0x1_00_00_00_00) >>> 0;
}

function fillConstants(): void {
	if (K[0]) return;
	for (let n = 2, found = 0; found < 64; n++) {
		let prime = true;
		for (let d = 2; d * d <= n; d++) {
			if (n % d === 0) {
				prime = false;
				break;
			}
		}

		if (!prime) continue;
		if (found < 8) H0[found] = fractionBits(n ** (1 / 2));
		K[found++] = fractionBits(n ** (1 / 3));
	}
}

/** The UTF-8 bytes of `text`, with or without `TextEncoder`. */
export function utf8(text: string): Uint8Array {
	if (typeof TextEncoder === 'function') return new TextEncoder().encode(text);
	const bytes: number[] = [];
	for (const char of text) {
		const point = char.codePointAt(0)!;
		// A lone surrogate cannot be encoded: U+FFFD, as TextEncoder writes it.
		const c = point >= 0xd8_00 && point <= 0xdf_ff ? 0xff_fd : point;
		if (c < 0x80) bytes.push(c);
		else if (c < 0x8_00) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
		else if (c < 0x1_00_00) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
		else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
	}

	return Uint8Array.from(bytes);
}

const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));

/** SHA-256 of the UTF-8 bytes of `text`, as lower-case hex. */
export function sha256Hex(text: string): string {
	fillConstants();
	const data = utf8(text);
	const blocks = Math.ceil((data.length + 9) / 64);
	const padded = new Uint8Array(blocks * 64);
	padded.set(data);
	padded[data.length] = 0x80;
	const view = new DataView(padded.buffer);
	const bits = data.length * 8;
	view.setUint32(padded.length - 8, Math.floor(bits / 0x1_00_00_00_00));
	view.setUint32(padded.length - 4, bits >>> 0);

	const h = H0.slice();
	const w = new Uint32Array(64);
	for (let offset = 0; offset < padded.length; offset += 64) {
		for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + (i * 4));
		for (let i = 16; i < 64; i++) {
			const s0 = rotr(w[i - 15]!, 7) ^ rotr(w[i - 15]!, 18) ^ (w[i - 15]! >>> 3);
			const s1 = rotr(w[i - 2]!, 17) ^ rotr(w[i - 2]!, 19) ^ (w[i - 2]! >>> 10);
			w[i] = w[i - 16]! + s0 + w[i - 7]! + s1;
		}

		let [a, b, c, d, e, f, g, hh] = h as unknown as number[];
		for (let i = 0; i < 64; i++) {
			const t1 = hh! + (rotr(e!, 6) ^ rotr(e!, 11) ^ rotr(e!, 25)) + ((e! & f!) ^ (~e! & g!)) + K[i]! + w[i]!;
			const t2 = (rotr(a!, 2) ^ rotr(a!, 13) ^ rotr(a!, 22)) + ((a! & b!) ^ (a! & c!) ^ (b! & c!));
			hh = g;
			g = f;
			f = e;
			e = (d! + t1) | 0;
			d = c;
			c = b;
			b = a;
			a = (t1 + t2) | 0;
		}

		h[0]! += a!;
		h[1]! += b!;
		h[2]! += c!;
		h[3]! += d!;
		h[4]! += e!;
		h[5]! += f!;
		h[6]! += g!;
		h[7]! += hh!;
	}

	return Array.from(h, word => word.toString(16).padStart(8, '0')).join('');
}
