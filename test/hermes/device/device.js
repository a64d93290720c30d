// The native side of one app launch, run by the Hermes VM before the Metro bundle: what an
// Android or iOS host gives React Native's JavaScript. The harness (test/hermes/harness.ts)
// puts `var launch = {...}` before this file and `device.start();` after the bundle.
//
// - An event loop: native callbacks (I/O completions) in order, then timers by due time. Time is
//   virtual: a timer fires without its wait, after every earlier one, as under fake timers.
// - The `RNCAsyncStorage` native module over `launch.disk`, the phone's storage.
// - The network: one server at the other end that honours the idempotency contract, with the
//   state it had at the end of the last launch (`launch.server`). `launch.loseReplyTo` names
//   items whose first request the server performs and whose reply then never arrives.
// - `RNGetRandomValues`, fed with bytes from Node's CSPRNG (`launch.random`).
// - `launch.killAfterLostReply`: once a reply was lost, the app is killed as soon as it waits.
//
// Written for the bare VM: Hermes 0.12 runs it untransformed, before React Native's set-up.
/* global launch, print, setTimeout */
var device = (function () {
	var hostSetTimeout = setTimeout;
	var callbacks = [];
	var timers = [];
	var nextTimerId = 1;
	var timerSeq = 0;
	var now = 0;
	var ticking = false;
	var stopped = false;
	var killRequested = false;
	var steps = 0;
	var STEP_LIMIT = 20000;
	var server = launch.server || {requests: [], effects: {}, answers: {}};
	var lostReplies = {};
	var disk = launch.disk;
	var randomPool = launch.random.slice();

	function dump(event) {
		var pending = timers.map(function (timer) { return timer.due - now; });
		print('@@device ' + JSON.stringify({event: event, disk: disk, server: server, pendingTimers: pending}));
	}

	function wake() {
		if (ticking || stopped) return;
		ticking = true;
		// The VM's own timer runs once no promise job is left: one task per turn.
		hostSetTimeout(tick, 0);
	}

	function tick() {
		ticking = false;
		if (stopped) return;
		if (killRequested && callbacks.length === 0) {
			stopped = true;
			dump('killed');
			return;
		}

		if (++steps > STEP_LIMIT) {
			stopped = true;
			dump('runaway');
			return;
		}

		if (callbacks.length > 0) {
			callbacks.shift()();
		} else if (timers.length > 0) {
			var first = 0;
			for (var i = 1; i < timers.length; i++) {
				if (timers[i].due < timers[first].due || (timers[i].due === timers[first].due && timers[i].seq < timers[first].seq)) first = i;
			}

			var timer = timers.splice(first, 1)[0];
			now = timer.due;
			timer.fn();
		} else {
			stopped = true;
			dump('idle');
			return;
		}

		wake();
	}

	/** Queues a native callback, as a native module answers on the JS thread. */
	function post(fn) {
		callbacks.push(fn);
		wake();
	}

	var timing = {
		createTimer: function (fn, delay) {
			var id = nextTimerId++;
			timers.push({id: id, due: now + Math.max(0, Number(delay) || 0), seq: timerSeq++, fn: fn});
			wake();
			return id;
		},
		deleteTimer: function (id) {
			for (var i = 0; i < timers.length; i++) {
				if (timers[i].id === id) {
					timers.splice(i, 1);
					return;
				}
			}
		},
		post: post,
	};

	var asyncStorage = {
		multiGet: function (keys, callback) {
			var result = keys.map(function (key) { return [key, Object.prototype.hasOwnProperty.call(disk, key) ? disk[key] : null]; });
			post(function () { callback(null, result); });
		},
		multiSet: function (pairs, callback) {
			pairs.forEach(function (pair) { disk[pair[0]] = String(pair[1]); });
			post(function () { callback(null); });
		},
		multiRemove: function (keys, callback) {
			keys.forEach(function (key) { delete disk[key]; });
			post(function () { callback(null); });
		},
		multiMerge: function (pairs, callback) {
			post(function () { callback([{message: 'multiMerge is not part of this stand-in'}]); });
		},
		getAllKeys: function (callback) {
			var keys = Object.keys(disk);
			post(function () { callback(null, keys); });
		},
		clear: function (callback) {
			Object.keys(disk).forEach(function (key) { delete disk[key]; });
			post(function () { callback(null); });
		},
	};

	var BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
	function base64(bytes) {
		var out = '';
		for (var i = 0; i < bytes.length; i += 3) {
			var n = (bytes[i] << 16) | ((bytes[i + 1] || 0) << 8) | (bytes[i + 2] || 0);
			out += BASE64[(n >> 18) & 63] + BASE64[(n >> 12) & 63];
			out += i + 1 < bytes.length ? BASE64[(n >> 6) & 63] : '=';
			out += i + 2 < bytes.length ? BASE64[n & 63] : '=';
		}

		return out;
	}

	var randomValues = {
		getRandomBase64: function (byteLength) {
			if (randomPool.length < byteLength) throw new Error('the harness gave too few random bytes');
			return base64(randomPool.splice(0, byteLength));
		},
	};

	/** The server: does the work once per key, replays its answer to every later request. */
	function serve(request) {
		var key = request.headers['idempotency-key'];
		server.requests.push({method: request.method, url: request.url, key: key === undefined ? null : key, body: request.body});
		if (key === undefined) return {status: 400, headers: {'content-type': 'application/json'}, body: '{"error":"Idempotency-Key required"}'};
		var stored = server.answers[key];
		if (stored) {
			if (stored.body !== request.body) return {status: 422, headers: {'content-type': 'application/json'}, body: '{"error":"key reused"}'};
			var replayed = {'idempotent-replayed': 'true'};
			for (var name in stored.answer.headers) replayed[name] = stored.answer.headers[name];
			return {status: stored.answer.status, headers: replayed, body: stored.answer.body};
		}

		var item = JSON.parse(request.body).item;
		server.effects[item] = (server.effects[item] || 0) + 1;
		var answer = {status: 201, headers: {'content-type': 'application/json'}, body: JSON.stringify({order: item, number: server.requests.length})};
		server.answers[key] = {body: request.body, answer: answer};
		return answer;
	}

	/** The UTF-8 bytes of `text`, as the native side holds a body. */
	function utf8(text) {
		var bytes = [];
		for (var i = 0; i < text.length; i++) {
			var code = text.codePointAt(i);
			if (code > 0xffff) i++;
			if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
			if (code < 0x80) bytes.push(code);
			else if (code < 0x800) bytes.push(0xc0 | (code >> 6), 0x80 | (code & 63));
			else if (code < 0x10000) bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
			else bytes.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 63), 0x80 | ((code >> 6) & 63), 0x80 | (code & 63));
		}

		return new Uint8Array(bytes);
	}

	var network = {
		utf8: utf8,
		/** As React Native's networking module: the answer, or a failure, arrives as a native callback. */
		send: function (request, callback) {
			post(function () {
				var answer = serve(request);
				var item = request.body ? JSON.parse(request.body).item : undefined;
				if (launch.loseReplyTo.indexOf(item) !== -1 && !lostReplies[item]) {
					lostReplies[item] = true;
					if (launch.killAfterLostReply) killRequested = true;
					callback(null);
					return;
				}

				callback(answer);
			});
		},
	};

	return {
		modules: {RNCAsyncStorage: asyncStorage, RNGetRandomValues: randomValues},
		timing: timing,
		network: network,
		/** After the bundle: the host starts the app, as Android's ReactActivity does. */
		start: function () {
			post(function () {
				globalThis.RN$AppRegistry.runApplication(launch.appKey, {rootTag: 1, initialProps: launch.initialProps});
			});
		},
	};
})();

// React Native's console polyfill (@react-native/js-polyfills) writes through this hook.
var nativeLoggingHook = function (message) {
	print(message);
};
