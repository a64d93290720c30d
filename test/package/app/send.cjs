// An app that requires the installed package (CommonJS) and sends one intent to a local server.
// Prints the result's status and key, and the keys the server saw.
const {createServer} = require('node:http');
const {createClient} = require('sendonce');

const keys = [];
const server = createServer((request, response) => {
	keys.push(request.headers['idempotency-key']);
	response.writeHead(201, {'content-type': 'application/json'}).end('{"id":1}');
});
server.listen(0, '127.0.0.1', async () => {
	const client = createClient({store: 'memory'});
	const intent = await client.intent('order', {url: `http://127.0.0.1:${server.address().port}/orders`, json: {item: 'book'}});
	const {status, key} = await intent.send();
	server.close();
	console.log(JSON.stringify({status, key, keys}));
});
