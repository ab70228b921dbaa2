// The official socket.io server (Node), serving /smcp the way the Go client
// expects of a gateway: it prints one JSON line per thing the Go test checks.
//   {"listening": PORT}
//   {"first": URL of the session's first request, "transport": its transport}
//   {"connect": auth, "query": handshake query, "transport": ...}
//   {"upgraded": transport}
//   {"joined": join payload, "transport": ...}
//   {"answer": the computer's answer to client:get_tools, "transport": ...}
import { Server } from "socket.io";
import http from "node:http";

const httpServer = http.createServer();
const io = new Server(httpServer, {});
const out = (o) => console.log(JSON.stringify(o));
io.engine.on("connection", (raw) => {
  out({ first: raw.request.url, transport: raw.transport.name });
  raw.on("upgrade", (t) => out({ upgraded: t.name }));
});
io.of("/smcp").on("connection", (s) => {
  out({ connect: s.handshake.auth, query: s.handshake.query, transport: s.conn.transport.name });
  s.on("server:join_office", (data, ack) => {
    out({ joined: data, transport: s.conn.transport.name });
    ack(true, null);
    s.timeout(10000).emit("client:get_tools", { agent: "node-agent", req_id: "r1", computer: data.name }, (err, ans) => {
      out({ answer: err ? String(err) : ans, transport: s.conn.transport.name });
    });
  });
});
httpServer.listen(0, "127.0.0.1", () => out({ listening: httpServer.address().port }));
