// The part of Hono's API that docs/server.md uses, so that its Hono example is type-checked
// without installing Hono: `new Hono()`, `app.post(path, handler)`, `c.req.raw`.
declare module 'hono' {
	export interface Context {
		req: {raw: Request};
	}

	export class Hono {
		post(path: string, handler: (c: Context) => Response | Promise<Response>): this;
		fetch: (request: Request) => Response | Promise<Response>;
	}
}
