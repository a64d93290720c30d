/*
 * A page with a TanStack Query mutation backed by sendonce, bundled by
 * test/browser/tanstack-query.test.ts: Pay starts it, and on load the page resumes what a reload
 * interrupted and lists it from `useMutationState`.
 */
import {QueryClient, QueryClientProvider, useMutation, useMutationState} from '@tanstack/react-query';
import {createRoot} from 'react-dom/client';
import {createClient} from '../../../src/index.js';
import {intentMutation, resumeMutations, type ResumedIntent} from '../../../src/integrations/tanstack-query.js';

const client = createClient({retry: {limit: 10, baseDelay: 100, maxDelay: 1000}});
const queryClient = new QueryClient();
void resumeMutations(queryClient, client);

function Checkout() {
	const pay = useMutation(intentMutation(client, {scope: (order: string) => `checkout:${order}`, request: order => ({url: '/orders', json: {order}})}));
	const resumed = useMutationState({
		filters: {mutationKey: ['sendonce'], predicate: mutation => mutation.meta?.sendonce !== undefined},
		select: mutation => ({...(mutation.meta?.sendonce as ResumedIntent), status: mutation.state.status, error: mutation.state.error?.message}),
	});
	return (
		<main>
			<button onClick={() => pay.mutate('tq-reload')}>Pay</button>
			<p id="status">{pay.status}</p>
			<ul>{resumed.map(({key, scope, status, error}) => <li key={key} data-key={key} data-status={status} title={error}>{scope}</li>)}</ul>
		</main>
	);
}

createRoot(document.querySelector('#root')!).render(<QueryClientProvider client={queryClient}><Checkout /></QueryClientProvider>);
