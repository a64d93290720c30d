import {createApp} from 'vue';
import {createClient} from 'sendonce';
import {demoClientOptions} from '../../shared/demo';
import {sendOnceKey} from 'sendonce/vue';
import App from './App.vue';
// The same look as the React example.
import '../../react-form/src/styles.css';

const client = createClient(demoClientOptions(location.search));

// Every useIntent() in the app uses this client (provideSendOnce(client) does the same for
// one component's descendants).
createApp(App).provide(sendOnceKey, client).mount('#root');
