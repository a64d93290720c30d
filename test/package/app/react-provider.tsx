// docs/react.md, "<SendOnceProvider client>".
import {createClient} from 'sendonce';
import {SendOnceProvider} from 'sendonce/react';

const client = createClient({retry: {limit: 4}});
root.render(<SendOnceProvider client={client}><App /></SendOnceProvider>);
