// Opens and closes N connections (join as a computer, then disconnect), one
// after the other, for the leak check in interop_test.go.
import { io } from 'socket.io-client';

const url = process.env.SMCP_URL;
const n = Number(process.env.SMCP_CHURN ?? 100);

// within fails with what was pending instead of hanging: socket.io-client
// itself never times out a namespace connect.
function within(ms, what, p) {
  let timer;
  const t = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms); });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

for (let i = 0; i < n; i++) {
  // Alternate: long-polling only, polling upgraded to WebSocket, WebSocket only.
  const transports = [['polling'], ['polling', 'websocket'], ['websocket']][i % 3];
  const s = io(`${url}/smcp`, {
    reconnection: false,
    transports,
    auth: { api_key: process.env.SMCP_COMPUTER_KEY },
  });
  const what = `connection ${i} (${transports.join('+')})`;
  await within(10000, `${what}: connect`, new Promise((resolve, reject) => {
    s.once('connect', resolve);
    s.once('connect_error', reject);
  }));
  const [ok, reason] = await new Promise((resolve, reject) => {
    s.timeout(5000).emit('server:join_office', { role: 'computer', name: `churn-${i}`, office_id: 'churn' },
      (err, ...args) => (err ? reject(new Error(`${what}: join: ${err.message}`)) : resolve(args)));
  });
  if (!ok) throw new Error(`${what}: join: ${reason}`);
  s.close();
}
console.log(`churned ${n} connections`);
