// The demo's service worker, built by vite.config.ts to /sw.js. Registered with the page's
// query string, it retries as the page does (`?fast`, `?attempts=n`).
import {installSendOnce, type ServiceWorkerScope} from 'sendonce/sw';
import {demoClientOptions} from '../../shared/demo';

declare const self: ServiceWorkerScope & {location: Location};

const {retry, timeout} = demoClientOptions(self.location.search);
installSendOnce(self, {retry, timeout});
