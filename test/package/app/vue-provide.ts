// docs/vue.md, "provideSendOnce(client) and sendOnceKey".
import {createApp} from 'vue';
import {createClient} from 'sendonce';
import {sendOnceKey} from 'sendonce/vue';

createApp(App).provide(sendOnceKey, createClient({retry: {limit: 4}})).mount('#app');
