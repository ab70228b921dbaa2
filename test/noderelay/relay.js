// The relay a JavaScript team would write on the official socket.io server:
// join the office room, forward client:tool_call to the named computer and
// return its answer. No authentication, no validation: it is the bench's Node
// peer (go run ./internal/cmd/bench -compare node), never a server to deploy.
// It prints "LISTEN http://host:port" once it listens (the bench reads it).
import { createServer } from "node:http";
import { Server } from "socket.io";

const http = createServer();
const io = new Server(http, { serveClient: false, transports: ["polling", "websocket"] });
const computers = new Map(); // office + "\0" + name -> socket

io.of("/smcp").on("connection", (socket) => {
  let office = "";
  let key = "";
  socket.on("server:join_office", (m, ack) => {
    office = m.office_id;
    socket.join(office);
    if (m.role === "computer") {
      key = office + "\0" + m.name;
      computers.set(key, socket);
    }
    ack?.(true, null);
  });
  socket.on("client:tool_call", (m, ack) => {
    const computer = computers.get(office + "\0" + m.computer);
    if (!computer) {
      ack({ code: 404, message: "computer not found in this office" });
      return;
    }
    computer.timeout(30000).emit("client:tool_call", m, (err, answer) => {
      ack(err ? { code: 500, message: String(err) } : answer);
    });
  });
  socket.on("disconnect", () => {
    if (key && computers.get(key) === socket) computers.delete(key);
  });
});

http.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  console.log(`LISTEN http://127.0.0.1:${http.address().port}`);
});
process.on("SIGTERM", () => io.close(() => process.exit(0)));
