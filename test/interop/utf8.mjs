// A Node computer and a Node agent (socket.io-client over WebSocket, whose ws
// package fails the connection on a text frame that is not UTF-8, as RFC
// 6455 says) that must stay connected while utf8_test.go sends invalid
// UTF-8 from every front end. The computer (node-pc, office SMCP_OFFICE)
// echoes tool calls; the agent (office SMCP_AGENT_OFFICE) calls go-pc, a
// Go computer that answers some calls with invalid UTF-8. Prints "ready"
// once both have joined, then waits for "done" on stdin, checks that
// neither was disconnected, and prints "ok".
import assert from 'node:assert/strict';
import { createInterface } from 'node:readline';
import { io } from 'socket.io-client';

const url = process.env.SMCP_URL;
const disconnects = [];

function connect(name) {
  const s = io(`${url}/smcp`, { reconnection: false, timeout: 5000, transports: ['websocket'] });
  s.on('disconnect', (reason) => disconnects.push(`${name}: ${reason}`));
  return new Promise((resolve, reject) => {
    s.once('connect', () => resolve(s));
    s.once('connect_error', reject);
  });
}

const join = (s, role, name, office) => new Promise((resolve, reject) => {
  s.timeout(10000).emit('server:join_office', { role, name, office_id: office },
    (err, ok, reason) => (err ? reject(err) : ok ? resolve() : reject(new Error(`join ${name}: ${reason}`))));
});

const call = (s, event, payload) => s.timeout(10000).emitWithAck(event, payload);

const computer = await connect('computer');
computer.on('client:tool_call', (req, ack) => {
  ack({ content: [{ type: 'text', text: `node-pc:${JSON.stringify(req.params)}` }], isError: false });
});
computer.on('client:get_tools', (req, ack) => {
  ack({ tools: [{ name: 'echo', description: 'echo', params_schema: { type: 'object' }, return_schema: null, meta: {} }], req_id: req.req_id });
});
computer.on('client:get_desktop', (req, ack) => ack({ desktops: [], req_id: req.req_id }));
computer.on('client:get_finder', (req, ack) => ack({ documents: [], total_count: 0, req_id: req.req_id }));
await join(computer, 'computer', 'node-pc', process.env.SMCP_OFFICE);

const agent = await connect('agent');
await join(agent, 'agent', 'node-agent', process.env.SMCP_AGENT_OFFICE);
console.log('ready');

const toolCall = (reqID) => ({ agent: 'node-agent', req_id: reqID, computer: 'go-pc', tool_name: 't', params: {}, timeout: 10 });

// go-pc answers these two with invalid UTF-8: each fails, with the
// gateway's own answer, and nothing else happens to the agent.
const bad = await call(agent, 'client:tool_call', toolCall('bad-answer'));
assert.equal(bad.isError, true, JSON.stringify(bad));
assert.equal(bad.meta?.a2c_error_code, 500, JSON.stringify(bad));
assert.match(bad.content[0].text, /invalid UTF-8/);
const cfg = await call(agent, 'client:get_config', { agent: 'node-agent', req_id: 'bad-config', computer: 'go-pc' });
assert.equal(cfg.code, 500, JSON.stringify(cfg));
assert.match(cfg.message, /invalid UTF-8/);

for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'done') break;
}
const good = await call(agent, 'client:tool_call', toolCall('good'));
assert.equal(good.isError, false, JSON.stringify(good));
assert.deepEqual(disconnects, []);
assert.ok(computer.connected && agent.connected);
computer.close();
agent.close();
console.log('ok');
