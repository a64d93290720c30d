// The service worker of test/browser/service-worker.test.ts, bundled as a classic script. Its
// URL's query sets it up: `no-sync` removes Background Sync, `token` gives it a `headers()`.
import {installSendOnce, type ServiceWorkerScope} from '../../src/sw.js';

declare const self: ServiceWorkerScope & {location: Location; SyncManager?: unknown};

const parameters = new URL(self.location.href).searchParams;
// As in Safari and Firefox.
if (parameters.has('no-sync')) delete self.SyncManager;
const token = parameters.get('token');
installSendOnce(self, {
	retry: {limit: 30, baseDelay: 100, maxDelay: 400},
	...(token ? {headers: () => ({authorization: `Bearer ${token}`})} : {}),
});
