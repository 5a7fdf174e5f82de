// The floor of a plugin's cache miss: the same HTTPS exchanges with the same warm server, from the smallest Node.js
// script that can make them — node:https, one keep-alive connection, the server's CA, the response bodies read — and
// nothing else (no cache, lock, settings, schema checks or token validation). What a miss costs above this is what
// the plugin could still save; the floor itself is Node starting, loading TLS and doing the handshake.
//
//   node https-floor.mjs '{"ca": "<CA PEM file>", "requests": [{"url", "method"?, "headers"?, "body"?}, ...]}'
//
// Prints the status codes, one per request, as a JSON array. Built-ins come from process.getBuiltinModule, as in the
// plugins' own code (an ESM import of node:https would build its namespace).
const { readFileSync } = process.getBuiltinModule('node:fs');
const https = process.getBuiltinModule('node:https');

const { ca, requests } = JSON.parse(process.argv[2]);
const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: readFileSync(ca) });
const statuses = [];
for (const { url, method = 'GET', headers = {}, body } of requests) {
  statuses.push(
    await new Promise((resolve, reject) => {
      const request = https.request(url, { method, headers, agent }, (response) => {
        response.on('data', () => {});
        response.on('end', () => resolve(response.statusCode));
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end(body);
    }),
  );
}
agent.destroy();
process.stdout.write(`${JSON.stringify(statuses)}\n`);
