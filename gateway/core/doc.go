// Package core is the gateway without its transports: sessions, offices, the
// join rules, routing of the client: events to computers, deadlines, in-flight
// tracking, notification fan-out and principals. It imports no Socket.IO or
// HTTP type, so every front end obeys the same rules by construction.
//
// How a front end uses it:
//
//   - Build one Hub with New(Config) and share it between front ends.
//   - Authenticate each caller with an Authenticator (KeyRing, or AllowAll
//     when the operator chose --insecure) to get a *Principal.
//   - A persistent connection (a Socket.IO socket) becomes a Session with
//     Hub.Attach(sid, principal, conn). conn implements Conn: Notify delivers
//     notify: events to that session, Request emits a client: event to it (when
//     it is a computer) and reports the ack. Call Session.Close when the
//     connection ends: the session leaves its office (the office is told) and
//     the requests it was answering fail at once.
//   - server:join_office / leave_office / list_room / update_* /
//     tool_call_cancel map to Session.Join, Leave, ListRoom, Update and
//     CancelToolCall. Errors are *smcp.Error (errors.As / smcp.AsError).
//   - client: events: a front end that forwards raw JSON calls
//     ParseRequest(event, payload) then Session.Route(ctx, req); the answer is
//     the computer's ack, unchanged, or a gateway-made CallToolResult for
//     client:tool_call. A front end that speaks typed messages calls
//     Session.CallTool, GetTools, GetConfig, GetDesktop, GetFinder or
//     ReadResource. Cancelling ctx (the agent went away) drops the request.
//   - A stateless caller (one RPC) acts as an agent for the length of one call
//     with Hub.ActAsAgent(principal, officeID, name); it gets a Session with the
//     same routing methods and must Close it.
//   - Governance (Config.Guard, see Guard): every routed request is
//     admitted by the guard before its computer sees it, and tool,
//     desktop and finder listings are filtered per caller; front ends only
//     map its refusals (403, 429 with details.retry_after_ms) to their
//     wire. Hub.Watch subscribes to an
//     office's notifications: a watcher receives every notification that any
//     member of the office receives.
package core
