// What react-native 0.81's InitializeCore (src/private/setup/setUpDefaultReactNativeEnvironment)
// puts on the global object before an app's first line, from the same sources React Native uses:
// whatwg-fetch's Headers, Request and Response, abort-controller's AbortController, React
// Native's own URL, timers over the native timing module. Nothing else: no crypto,
// structuredClone, EventTarget or AbortSignal.timeout, which React Native does not add either
// (nor Blob, FormData or XMLHttpRequest, which it does and sendonce does not use). Hermes 0.12
// has no TextEncoder, which React Native 0.81's Hermes has: sendonce runs here without it.
// Only `fetch` differs: the network behind it is the device's stand-in, not XMLHttpRequest.
const {timing, network} = global.device;

// setUpGlobals
global.window = global;
global.self = global;
global.process = global.process || {};
global.process.env = global.process.env || {};
global.process.env.NODE_ENV = __DEV__ ? 'development' : 'production';

// setUpTimers (bridgeless: host timers; the microtask queue is the VM's)
global.setTimeout = (callback, delay = 0, ...args) => timing.createTimer(() => callback(...args), delay);
global.clearTimeout = id => {
	if (id != null) timing.deleteTimer(id);
};
global.setInterval = (callback, delay = 0, ...args) => {
	const handle = {};
	const run = () => {
		handle.id = timing.createTimer(run, delay);
		callback(...args);
	};
	handle.id = timing.createTimer(run, delay);
	return handle;
};
global.clearInterval = handle => {
	if (handle != null) timing.deleteTimer(handle.id);
};
global.queueMicrotask = callback => {
	Promise.resolve().then(callback).catch(error => setTimeout(() => {
		throw error;
	}, 0));
};
global.setImmediate = (callback, ...args) => {
	const handle = {cancelled: false};
	global.queueMicrotask(() => {
		if (!handle.cancelled) callback(...args);
	});
	return handle;
};
global.clearImmediate = handle => {
	if (handle) handle.cancelled = true;
};

// setUpXHR, in React Native's order: URL and AbortController are there when whatwg-fetch loads.
const {URL, URLSearchParams} = require('../Blob/URL');
global.URL = URL;
global.URLSearchParams = URLSearchParams;
const {AbortController, AbortSignal} = require('abort-controller/dist/abort-controller');
global.AbortController = AbortController;
global.AbortSignal = AbortSignal;
const {DOMException, Headers, Request, Response} = require('whatwg-fetch');
global.Headers = Headers;
global.Request = Request;
global.Response = Response;
/**
 * React Native's Response reads its body through a native Blob, so that text() and
 * arrayBuffer() both work; whatwg-fetch without Blob refuses arrayBuffer() on a text body.
 */
function response(answer, url) {
	const made = new Response(answer.body, {status: answer.status, headers: answer.headers, url});
	made.arrayBuffer = () => made.text().then(text => network.utf8(text).buffer);
	return made;
}

global.fetch = (input, init) => new Promise((resolve, reject) => {
	const request = new Request(input, init);
	const aborted = () => reject(new DOMException('Aborted', 'AbortError'));
	if (request.signal && request.signal.aborted) {
		aborted();
		return;
	}

	let settled = false;
	request.signal?.addEventListener('abort', () => {
		if (settled) return;
		settled = true;
		aborted();
	});
	const headers = {};
	request.headers.forEach((value, name) => {
		headers[name] = value;
	});
	request.text().then(body => {
		network.send({method: request.method, url: request.url, headers, body: init?.body === undefined ? undefined : body}, answer => {
			if (settled) return;
			settled = true;
			// As whatwg-fetch's xhr.onerror: the only error a lost connection gives.
			if (answer === null) reject(new TypeError('Network request failed'));
			else resolve(response(answer, request.url));
		});
	}, reject);
});

// setUpNavigator
global.navigator = {product: 'ReactNative'};
