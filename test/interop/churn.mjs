// Opens and closes N connections (join as a computer, then disconnect), one
// after the other, for the leak check in interop_test.go.
import { io } from 'socket.io-client';

const url = process.env.SMCP_URL;
const n = Number(process.env.SMCP_CHURN ?? 100);
for (let i = 0; i < n; i++) {
  const s = io(`${url}/smcp`, {
    reconnection: false,
    // Alternate: long-polling only, polling upgraded to WebSocket, WebSocket only.
    transports: [['polling'], ['polling', 'websocket'], ['websocket']][i % 3],
    auth: { api_key: process.env.SMCP_COMPUTER_KEY },
  });
  await new Promise((resolve, reject) => { s.once('connect', resolve); s.once('connect_error', reject); });
  const [ok, reason] = await new Promise((resolve, reject) => {
    s.timeout(5000).emit('server:join_office', { role: 'computer', name: `churn-${i}`, office_id: 'churn' },
      (err, ...args) => (err ? reject(err) : resolve(args)));
  });
  if (!ok) throw new Error(`join ${i}: ${reason}`);
  s.close();
}
console.log(`churned ${n} connections`);
