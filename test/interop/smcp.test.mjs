// Drives a running gateway with the reference socket.io-client, as both an
// agent and a computer. interop_test.go starts the gateway (and a Go
// computer named go-pc in the same office) and passes its address in
// SMCP_URL and keys in SMCP_AGENT_KEY / SMCP_COMPUTER_KEY.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { io } from 'socket.io-client';

const url = process.env.SMCP_URL;
const office = process.env.SMCP_OFFICE ?? 'interop';
assert.ok(url, 'SMCP_URL is required');

const sockets = [];
after(() => sockets.forEach((s) => s.close()));

function connect(opts) {
  const s = io(`${url}/smcp`, { reconnection: false, timeout: 5000, query: { a2c_version: '0.2.0' }, ...opts });
  sockets.push(s);
  return s;
}

function connected(s) {
  if (s.connected) return Promise.resolve();
  return new Promise((resolve, reject) => {
    s.once('connect', resolve);
    s.once('connect_error', reject);
  });
}

function next(s, event) {
  return new Promise((resolve) => s.once(event, resolve));
}

const call = (s, event, payload) => s.timeout(10000).emitWithAck(event, payload);

// emitWithAck keeps only the first argument: join and leave ack with two.
const callArgs = (s, event, payload) => new Promise((resolve, reject) => {
  s.timeout(10000).emit(event, payload, (err, ...args) => (err ? reject(err) : resolve(args)));
});

// The computer: header auth, default transports (long-polling, then upgrade).
const computer = connect({ extraHeaders: { 'x-api-key': process.env.SMCP_COMPUTER_KEY } });
computer.on('client:tool_call', (req, ack) => {
  ack({ content: [{ type: 'text', text: `node-pc:${req.tool_name}:${JSON.stringify(req.params)}` }], isError: false });
});
computer.on('client:get_tools', (req, ack) => {
  ack({ tools: [{ name: 'shout', description: 'upper-case', params_schema: { type: 'object' }, return_schema: null, meta: {} }], req_id: req.req_id });
});

// The agent: key in the auth object, as browsers do, WebSocket only.
const agent = connect({ auth: { token: process.env.SMCP_AGENT_KEY }, transports: ['websocket'] });

test('computer joins with a two-argument ack', { timeout: 15000 }, async () => {
  await connected(computer);
  const [ok, reason] = await callArgs(computer, 'server:join_office', { role: 'computer', name: 'node-pc', office_id: office });
  assert.equal(ok, true);
  assert.equal(reason, null);
});

test('agent joins and the computer is told', { timeout: 15000 }, async () => {
  await connected(agent);
  const entered = next(computer, 'notify:enter_office');
  const [ok, reason] = await callArgs(agent, 'server:join_office', { role: 'agent', name: 'node-agent', office_id: office });
  assert.deepEqual([ok, reason], [true, null]);
  assert.deepEqual(await entered, { office_id: office, agent: 'node-agent' });
});

test('list_room shows the office', { timeout: 15000 }, async () => {
  const ret = await call(agent, 'server:list_room', { agent: 'node-agent', req_id: 'r-list', office_id: office });
  assert.equal(ret.req_id, 'r-list');
  const members = ret.sessions.map((s) => `${s.role}:${s.name}`).sort();
  assert.deepEqual(members, ['agent:node-agent', 'computer:go-pc', 'computer:node-pc']);
  for (const s of ret.sessions) {
    assert.equal(s.office_id, office);
    assert.ok(s.sid);
  }
});

test('tool_call reaches a Node computer and a Go computer', { timeout: 15000 }, async () => {
  const res = await call(agent, 'client:tool_call', {
    agent: 'node-agent', req_id: 'r-1', computer: 'node-pc', tool_name: 'shout', params: { text: 'hi' }, timeout: 5,
  });
  assert.deepEqual(res, { content: [{ type: 'text', text: 'node-pc:shout:{"text":"hi"}' }], isError: false });
  const goRes = await call(agent, 'client:tool_call', {
    agent: 'node-agent', req_id: 'r-2', computer: 'go-pc', tool_name: 'echo', params: { n: 1 }, timeout: 5,
  });
  assert.equal(goRes.isError, false);
  assert.equal(goRes.content[0].text, 'go-pc:r-2');
  const tools = await call(agent, 'client:get_tools', { agent: 'node-agent', req_id: 'r-3', computer: 'node-pc' });
  assert.equal(tools.req_id, 'r-3');
  assert.equal(tools.tools[0].name, 'shout');
});

test('a computer update is a notification for the agent', { timeout: 15000 }, async () => {
  const note = next(agent, 'notify:update_tool_list');
  computer.emit('server:update_tool_list', { computer: 'node-pc' });
  assert.deepEqual(await note, { computer: 'node-pc' });
});

test('refusals are flat errors', { timeout: 15000 }, async () => {
  const notFound = await call(agent, 'client:get_tools', { agent: 'node-agent', req_id: 'r-4', computer: 'nobody' });
  assert.deepEqual(notFound, { code: 404, message: 'computer not found in this office' });
  const bad = await call(agent, 'client:tool_call', { agent: 'node-agent', req_id: 'r-5', computer: 'node-pc', tool_name: 'shout', timeout: 0 });
  assert.equal(bad.code, 400);
  const notObject = await call(agent, 'client:tool_call', 'hello');
  assert.equal(notObject.code, 400);
});

test('a bad key gets a connect_error with a flat 401', { timeout: 15000 }, async () => {
  const s = connect({ auth: { api_key: 'wrong' }, transports: ['websocket'] });
  await assert.rejects(connected(s), (err) => {
    assert.equal(err.data?.code, 401);
    return true;
  });
});

// A gateway serving 0.2 alone refuses 0.3.1; one serving 0.2 to 0.4 refuses
// what the runner names.
const foreign = process.env.SMCP_FOREIGN_VERSION ?? '0.3.1';
const serverVersion = process.env.SMCP_SERVER_VERSION ?? '0.2.0';

test('an incompatible a2c_version is refused at the handshake', { timeout: 15000 }, async () => {
  const res = await fetch(`${url}/socket.io/?EIO=4&transport=polling&a2c_version=${foreign}`);
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('x-a2c-error-code'), '4008');
  const body = await res.json();
  assert.equal(body.code, 4008);
  assert.equal(body.server_version, serverVersion);
  assert.equal(body.client_version, foreign);
});
