// `sendonce/sw`: the service worker half (`installSendOnce`) and its page-side opt-in
// (`backgroundSync`). Pages that do not import it pay nothing for it.
export {installSendOnce, type InstallOptions, type InstalledSendOnce, type ServiceWorkerScope, type WorkerMessage} from './sw/worker.js';
export {backgroundSync} from './sw/background-sync.js';
export {MESSAGE_TYPE, SEND_TYPE, SYNC_TAG} from './sw/names.js';
