import {inject} from 'vitest';
import {binaryWork} from '../integration/binary.js';
import {startContractServer, type ContractServer} from '../server/contract-server.js';

declare global {
	interface Window {
		/** `import('/sendonce-sw.js')`: `sendonce/sw` for the page. */
		loadSw(): Promise<typeof import('../../src/sw.js')>;
		/** `import('/sendonce-fetch.js')`: `sendonce/fetch`, bundled with its own copy of the core. */
		loadFetch(): Promise<typeof import('../../src/integrations/fetch.js')>;
		/** What a scenario keeps in the page between two evaluations. */
		kept: Record<string, any>;
	}
}

/**
 * The site's page. `loadSendonce` and `loadSw` are defined by the page itself (an `import()`
 * in a scenario's function would be rewritten by vitest). Its query takes away what some
 * browsers lack or refuse: `no-sync` Background Sync (as Firefox and Safari show the page),
 * `no-storage` IndexedDB and sessionStorage (as a sandboxed frame or a locked-down WebView).
 */
const PAGE = `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>sendonce</title>
<script>
const query = new URLSearchParams(location.search);
if (query.has('no-sync')) delete window.SyncManager;
if (query.has('no-storage')) {
	delete window.indexedDB;
	Object.defineProperty(window, 'sessionStorage', {configurable: true, get() {
		throw new DOMException('Access is denied for this document.', 'SecurityError');
	}});
}
window.loadSendonce = () => import('/sendonce.js');
window.loadSw = () => import('/sendonce-sw.js');
window.loadFetch = () => import('/sendonce-fetch.js');
window.kept = {};
window.sendonceEvents = [];
window.recordEvent = event => window.sendonceEvents.push({type: event.type, store: event.store});
</script>
</head>
<body></body>
</html>
`;

/** A page of the site that does not load sendonce. */
const PLAIN = '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>plain</title><p>Hello';

/** The contract server of the engines' scenarios, and the switch that takes its API down. */
export interface Site {
	readonly server: ContractServer;
	/** While true, the API answers 503 before doing anything (after any queued fault). */
	apiDown: boolean;
}

/**
 * The contract server, also serving the page, a plain page, the package and the service
 * worker from the same origin. An order whose body has `answer: 'png'` is answered with the
 * bytes of a PNG (test/integration/binary.ts).
 */
export async function startSite(): Promise<Site> {
	const scripts = inject('engineScripts');
	const files: Record<string, [string, string]> = {
		'/': ['text/html; charset=utf-8', PAGE],
		'/plain': ['text/html; charset=utf-8', PLAIN],
		'/sendonce.js': ['text/javascript; charset=utf-8', scripts.sendonce],
		'/sendonce-sw.js': ['text/javascript; charset=utf-8', scripts.sw],
		'/sendonce-fetch.js': ['text/javascript; charset=utf-8', scripts.fetch],
		'/sw.js': ['text/javascript; charset=utf-8', scripts.worker],
	};
	const site = {apiDown: false} as Site & {server: ContractServer};
	site.server = await startContractServer({
		// It answers checks of a key (issue 33).
		checks: true,
		work: binaryWork,
		faultFor: () => (site.apiDown ? {type: 'error-before', status: 503} : undefined),
		serve(request, response) {
			if (request.method !== 'GET') return false;
			const [type, body] = files[new URL(request.url ?? '/', 'http://localhost').pathname] ?? ['text/plain', 'not found'];
			response.writeHead(body === 'not found' ? 404 : 200, {'content-type': type, 'cache-control': 'no-store'});
			response.end(body);
			return true;
		},
	});
	return site;
}
