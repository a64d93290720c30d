// What the snippets of the README and docs/ take from the app around them.
declare function getToken(): string;
declare function show(message: string): void;
declare function showNotice(message: string): void;
/** A component, for React's `<App />` and Vue's `createApp(App)` alike. */
declare const App: () => null;
declare const root: {render(children: unknown): void};
declare const client: import('sendonce').SendOnceClient;
