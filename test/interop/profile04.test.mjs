// A 0.4 office driven by the reference socket.io-client as the Python SDK
// 0.4.x drives it: a2c_version=0.4.0 in the handshake's query, long-polling
// first, the key in auth.token, no role in auth. interop_test.go runs it
// beside smcp.test.mjs (a 0.2 office) against one gateway, and passes the
// 0.2 office's id in SMCP_OFFICE_02.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { io } from 'socket.io-client';

const url = process.env.SMCP_URL;
const office = process.env.SMCP_OFFICE_04 ?? 'office-04';
const office02 = process.env.SMCP_OFFICE_02 ?? 'interop';
assert.ok(url, 'SMCP_URL is required');

const sockets = [];
after(() => sockets.forEach((s) => s.close()));

function connect(version, key, opts = {}) {
  const query = version ? { a2c_version: version } : {};
  const s = io(`${url}/smcp`, { reconnection: false, timeout: 5000, query, auth: { token: key }, ...opts });
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

const next = (s, event) => new Promise((resolve) => s.once(event, resolve));
const call = (s, event, payload, ms = 10000) => s.timeout(ms).emitWithAck(event, payload);
const callArgs = (s, event, payload) => new Promise((resolve, reject) => {
  s.timeout(10000).emit(event, payload, (err, ...args) => (err ? reject(err) : resolve(args)));
});

// The computer answers every routed event of 0.4 with what it was sent,
// under the event's name, so the agent sees both legs.
const routed = ['client:tool_call', 'client:get_tools', 'client:get_config', 'client:get_desktop', 'client:get_finder',
  'client:read_resource', 'client:get_resources', 'client:get_skills', 'client:get_skill', 'client:get_blob', 'client:put_blob'];
const computer = connect('0.4.0', process.env.SMCP_COMPUTER_KEY);
const received = [];
for (const ev of routed) {
  computer.on(ev, (req, ack) => {
    received.push(ev);
    if (ev === 'client:get_blob') {
      // One chunk of 256 KiB, base64: about 350 KB on the wire.
      const blob = Buffer.alloc(256 * 1024, 7).toString('base64');
      ack({ blob_handle: req.blob_handle, mime_type: 'application/octet-stream', total_size: 256 * 1024, sha256: 'x', chunk_offset: 0, eof: true, blob, req_id: req.req_id });
      return;
    }
    if (ev === 'client:get_skill' && req.name === 'bad..name') {
      ack({ code: 4016, message: 'Invalid skill name', details: { name: req.name } });
      return;
    }
    ack({ event: ev, echo: req });
  });
}
const cancels = [];
computer.on('notify:tool_call_cancel', (n) => cancels.push(n));

const agent = connect('0.4.0', process.env.SMCP_AGENT_KEY);

test('computer and agent join a 0.4 office', { timeout: 15000 }, async () => {
  await connected(computer);
  assert.equal(computer.io.engine.transport.name === 'polling' || computer.io.engine.transport.name === 'websocket', true);
  assert.deepEqual(await callArgs(computer, 'server:join_office', { role: 'computer', name: 'pc4', office_id: office }), [true, null]);
  await connected(agent);
  const entered = next(computer, 'notify:enter_office');
  assert.deepEqual(await callArgs(agent, 'server:join_office', { role: 'agent', name: 'agent4', office_id: office }), [true, null]);
  assert.deepEqual(await entered, { office_id: office, agent: 'agent4' });
});

test('list_room shows each member a2c_version', { timeout: 15000 }, async () => {
  const ret = await call(agent, 'server:list_room', { agent: 'agent4', req_id: 'r-list', office_id: office });
  assert.equal(ret.req_id, 'r-list');
  assert.deepEqual(ret.sessions.map((s) => `${s.role}:${s.name}:${s.a2c_version}`).sort(), ['agent:agent4:0.4.0', 'computer:pc4:0.4.0']);
});

test('every routed event of 0.4 reaches the computer and its answer comes back', { timeout: 30000 }, async () => {
  for (const ev of routed) {
    if (ev === 'client:get_blob') continue;
    // Fields the gateway never reads travel as they are: an opaque exposed
    // tool name with "__", a bundle id, a blob handle, an upload's chunk.
    const req = {
      agent: 'agent4', req_id: `r-${ev}`, computer: 'pc4', tool_name: 'my_bundle__tool__x', params: { n: 1 }, timeout: 5,
      mcp_server: 'my_bundle', name: 'mcp:my_bundle:skill', rel_path: 'SKILL.md', blob_handle: 'h.1', upload_id: 'u1',
      chunk_offset: 0, eof: true, total_size: 2, sha256: 'ab', blob: 'AAE=', uri: 'window://x/y', extra: [1, 'x', null],
    };
    assert.deepEqual(await call(agent, ev, req), { event: ev, echo: req }, ev);
  }
  assert.deepEqual(received.filter((e) => e !== 'client:get_blob'), routed.filter((e) => e !== 'client:get_blob'));
});

test('a 256 KiB blob chunk passes the message limit', { timeout: 15000 }, async () => {
  const ret = await call(agent, 'client:get_blob', { agent: 'agent4', req_id: 'r-blob', computer: 'pc4', blob_handle: 'h' });
  assert.equal(Buffer.from(ret.blob, 'base64').length, 256 * 1024);
  assert.equal(ret.eof, true);
});

test("a computer's flat error comes back as it is", { timeout: 15000 }, async () => {
  const ret = await call(agent, 'client:get_skill', { agent: 'agent4', req_id: 'r-bad', computer: 'pc4', name: 'bad..name' });
  assert.deepEqual(ret, { code: 4016, message: 'Invalid skill name', details: { name: 'bad..name' } });
});

test('every update of 0.4 is a notification for the agent', { timeout: 15000 }, async () => {
  for (const suffix of ['update_config', 'update_tool_list', 'update_desktop', 'update_finder', 'update_skills']) {
    const note = next(agent, `notify:${suffix}`);
    computer.emit(`server:${suffix}`, { computer: 'not-me' });
    assert.deepEqual(await note, { computer: 'pc4' }, suffix);
  }
});

test('tool_call_cancel has no ack in 0.4 and reaches the computer', { timeout: 15000 }, async () => {
  const note = next(computer, 'notify:tool_call_cancel');
  agent.emit('server:tool_call_cancel', { agent: 'agent4', req_id: 'r-cancel' });
  assert.deepEqual(await note, { agent: 'agent4', req_id: 'r-cancel' });
  await assert.rejects(call(agent, 'server:tool_call_cancel', { agent: 'agent4', req_id: 'r-cancel-2' }, 1500), /timed out/);
});

test('refusals are flat errors; an event 0.4 lacks is a 404', { timeout: 15000 }, async () => {
  assert.deepEqual(await call(agent, 'client:get_skills', { agent: 'agent4', req_id: 'r', computer: 'nobody' }),
    { code: 404, message: 'computer not found in this office' });
  assert.deepEqual(await call(agent, 'client:nope', { agent: 'agent4', req_id: 'r', computer: 'pc4' }),
    { code: 404, message: 'unknown event client:nope' });
  assert.equal((await call(computer, 'client:get_tools', { agent: 'agent4', req_id: 'r', computer: 'pc4' })).code, 403);
});

test('a 0.3 member is refused from the 0.4 office, naming both versions', { timeout: 15000 }, async () => {
  const s = connect('0.3.2', process.env.SMCP_COMPUTER_KEY);
  await connected(s);
  assert.deepEqual(await callArgs(s, 'server:join_office', { role: 'computer', name: 'pc3', office_id: office }),
    [false, `office ${office} speaks 0.4; this connection speaks 0.3`]);
  const old = connect(null, process.env.SMCP_COMPUTER_KEY, { transports: ['websocket'] });
  await connected(old);
  assert.deepEqual(await callArgs(old, 'server:join_office', { role: 'computer', name: 'pc2', office_id: office }),
    [false, `office ${office} speaks 0.4; this connection speaks 0.2`]);
});

test('a 0.4 member is refused from the 0.2 office', { timeout: 15000 }, async () => {
  const s = connect('0.4.0', process.env.SMCP_COMPUTER_KEY, { transports: ['websocket'] });
  await connected(s);
  assert.deepEqual(await callArgs(s, 'server:join_office', { role: 'computer', name: 'pc4b', office_id: office02 }),
    [false, `office ${office02} speaks 0.2; this connection speaks 0.4`]);
});

test('a 0.5 client is refused at the handshake with the served range', { timeout: 15000 }, async () => {
  const res = await fetch(`${url}/socket.io/?EIO=4&transport=polling&a2c_version=0.5.0`);
  assert.equal(res.status, 400);
  assert.equal(res.headers.get('x-a2c-error-code'), '4008');
  assert.deepEqual(await res.json(), {
    code: 4008, message: 'Protocol version mismatch', server_version: '0.4.0', client_version: '0.5.0',
    min_supported: '0.2.0', max_supported: '0.4.999', details: { supported: ['0.2', '0.3', '0.4'] },
  });
  const s = connect('0.5.0', process.env.SMCP_COMPUTER_KEY, { transports: ['websocket'] });
  await assert.rejects(connected(s));
});
